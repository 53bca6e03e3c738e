"""transformers' tests/models/wav2vec2/test_tokenization_wav2vec2.py (huggingface/transformers at
0745ca7e92dec0e77c82511ef01711861188ddf9), translated: the decoding tests of
Wav2Vec2CTCTokenizerTest and Wav2Vec2TokenizerTest run on oasr_tok's wav2vec2 kind through
transformers' face (oasr_tok.toolkits.hf_ctc.Wav2Vec2CTCDecoder), with transformers 5 (imported
without torch) computing the expected value in the same run beside the upstream literals.

The upstream checkpoint facebook/wav2vec2-base-960h comes from the hub, which is not reachable:
its vocabulary is fixtures/wav2vec2/base-960h (the same 32 tokens; the setUp vocabulary of the
tests is the same list). Tokens added with add_tokens / add_special_tokens are saved with
transformers' save_pretrained and read by our kind from the files, as a user's would be.

Deliberate differences, strict xfails naming them:
* encode (test_tokenizer_add_token_chars, test_tokenizer_add_token_words,
  test_add_tokens_tokenizer): the wav2vec2 kind is decode-only (docs/kinds/wav2vec2.md);
* test_tokenizer_decode_added_tokens's literals: "HELLO<unk>!?!?$$$" is older transformers',
  which decoded added tokens apart from the rest; transformers 5 (the installed 5.25) treats them
  as vocabulary tokens and prints "!? !?" for a delimiter between them, as we do (checked against
  it in the next test). Its "HELO" is transformers' skip_special_tokens dropping the CTC blank
  before grouping repeats, which the face gives by default (drop_pad_before_grouping=False
  gives the CTC-correct "HELLO").

Not translated (no decoding in them): Wav2Vec2Tokenizer's audio tests (test_call,
test_padding, test_zero_mean_unit_variance_normalization, test_return_attention_mask,
test_pretrained_checkpoints_are_set_correctly) and the save/load tests of the vocabulary files
(test_save_pretrained, test_get_vocab, test_save_and_load_tokenizer,
test_tokenizer_slow_store_full_signature); the TokenizerTesterMixin's shared encode tests.
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import Wav2Vec2CTCTokenizer

import oasr_tok
from oasr_tok import EncodeNotSupportedError, InvalidIdError, TokenizerSpec, build_tokenizer
from oasr_tok.toolkits.hf_ctc import CTCDecoderOutput, Wav2Vec2CTCDecoder, word_offsets_from_char_offsets

from paths import own

logging.getLogger("transformers").setLevel(logging.ERROR)

SETUP_VOCAB = "<pad> <s> </s> <unk> | E T A O N I H S R D L U M W C F G Y P B V K ' X J Q Z".split(" ")
SPECIAL_TOKENS_MAP = {"pad_token": "<pad>", "unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>"}


def setup_tokenizer(tmp_path, **config):
    """The tests' setUp: vocab.json of SETUP_VOCAB and the special tokens map (get_tokenizer)."""
    folder = tmp_path / "setup"
    folder.mkdir(exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(dict(zip(SETUP_VOCAB, range(len(SETUP_VOCAB))))) + "\n")
    (folder / "special_tokens_map.json").write_text(json.dumps(SPECIAL_TOKENS_MAP))
    (folder / "tokenizer_config.json").write_text(json.dumps({**SPECIAL_TOKENS_MAP, **config}))
    return Wav2Vec2CTCDecoder(oasr_tok.load(str(folder)), unknown_ids="unk"), Wav2Vec2CTCTokenizer.from_pretrained(
        str(folder)
    )


def pretrained(tmp_path, added=(), special=None, **options):
    """facebook/wav2vec2-base-960h's tokenizer (from_pretrained), with tokens added as the test
    adds them, saved by transformers and read back by our kind; and transformers' own."""
    theirs = Wav2Vec2CTCTokenizer.from_pretrained(own("wav2vec2/base-960h"))
    if added:
        theirs.add_tokens(list(added))
    if special:
        theirs.add_special_tokens(special)
    folder = tmp_path / "base-960h"
    theirs.save_pretrained(str(folder))
    return Wav2Vec2CTCDecoder(oasr_tok.load(str(folder)), unknown_ids="unk", **options), theirs


def get_from_offsets(offsets, key):
    return [d[key] for d in offsets]


# -- Wav2Vec2CTCTokenizerTest (and Wav2Vec2TokenizerTest's identical decoding tests) ----------


@pytest.mark.xfail(strict=True, raises=EncodeNotSupportedError, reason="deliberate: the wav2vec2 kind is decode-only")
def test_tokenizer_add_token_chars(tmp_path):
    ours, _ = pretrained(tmp_path, added=["x"])
    assert ours.tokenizer.encode("C x A") == [19, 4, 32, 4, 7]


@pytest.mark.xfail(strict=True, raises=EncodeNotSupportedError, reason="deliberate: the wav2vec2 kind is decode-only")
def test_tokenizer_add_token_words(tmp_path):
    ours, _ = pretrained(tmp_path, added=["xxx"])
    assert ours.tokenizer.encode("C xxx A B") == [19, 4, 32, 4, 7, 4, 24]


@pytest.mark.xfail(strict=True, raises=EncodeNotSupportedError, reason="deliberate: the wav2vec2 kind is decode-only")
def test_add_tokens_tokenizer(tmp_path):
    ours, _ = pretrained(tmp_path, added=["aaaaa bbbbbb", "cccccccccdddddddd"])
    assert len(ours.tokenizer.encode("aaaaa bbbbbb low cccccccccdddddddd l")) >= 4


@pytest.mark.parametrize("upstream_class", ["Wav2Vec2CTCTokenizerTest", "Wav2Vec2TokenizerTest"])
def test_tokenizer_decode(tmp_path, upstream_class):
    ours, theirs = pretrained(tmp_path)
    sample_ids = [
        [11, 5, 15, ours.pad_token_id, 15, 8, 98],
        [24, 22, 5, ours.word_delimiter_token_id, 24, 22, 5, 77],
    ]
    tokens = ours.decode(sample_ids[0])
    batch_tokens = ours.batch_decode(sample_ids)
    assert tokens == batch_tokens[0]
    assert batch_tokens == ["HELLO<unk>", "BYE BYE<unk>"] == theirs.batch_decode(sample_ids)


@pytest.mark.parametrize("upstream_class", ["Wav2Vec2CTCTokenizerTest", "Wav2Vec2TokenizerTest"])
def test_tokenizer_decode_special(tmp_path, upstream_class):
    ours, theirs = pretrained(tmp_path)
    pad, bar = ours.pad_token_id, ours.word_delimiter_token_id
    sample_ids = [[11, 5, 15, pad, 15, 8, 98], [24, 22, 5, bar, 24, 22, 5, 77]]
    sample_ids_2 = [
        [11, 5, 5, 5, 5, 5, 15, 15, 15, pad, 15, 8, 98],
        [24, 22, 5, pad, pad, pad, bar, 24, 22, 5, 77, bar],
    ]
    batch_tokens = ours.batch_decode(sample_ids)
    batch_tokens_2 = ours.batch_decode(sample_ids_2)
    assert batch_tokens == batch_tokens_2
    assert batch_tokens == ["HELLO<unk>", "BYE BYE<unk>"] == theirs.batch_decode(sample_ids_2)


def _added_sample(ours):
    pad, bar = ours.pad_token_id, ours.word_delimiter_token_id
    return [
        [11, 5, 15, pad, 15, 8, 98, 32, 32, 33, bar, 32, 32, 33, 34, 34],
        [24, 22, 5, bar, 24, 22, 5, 77, pad, 34, 34],
    ]


@pytest.mark.parametrize("upstream_class", ["Wav2Vec2CTCTokenizerTest", "Wav2Vec2TokenizerTest"])
@pytest.mark.xfail(
    strict=True,
    reason="the upstream literals are older transformers' (added tokens decoded apart): transformers 5 "
    "prints '!? !?' as we do (docs/kinds/wav2vec2.md § transformers' face)",
)
def test_tokenizer_decode_added_tokens(tmp_path, upstream_class):
    ours, _ = pretrained(tmp_path, added=["!", "?"], special={"cls_token": "$$$"})
    sample_ids = _added_sample(ours)
    assert ours.batch_decode(sample_ids) == ["HELLO<unk>!?!?$$$", "BYE BYE<unk>$$$"]
    assert ours.batch_decode(sample_ids, skip_special_tokens=True) == ["HELO!?!?", "BYE BYE"]


def test_tokenizer_decode_added_tokens_as_transformers_5_decodes_them(tmp_path):
    ours, theirs = pretrained(tmp_path, added=["!", "?"], special={"cls_token": "$$$"})
    sample_ids = _added_sample(ours)
    assert ours.batch_decode(sample_ids) == theirs.batch_decode(sample_ids) == ["HELLO<unk>!? !?$$$", "BYE BYE<unk>$$$"]
    # transformers' skip_special_tokens, exactly, by default ...
    expected = theirs.batch_decode(sample_ids, skip_special_tokens=True)
    assert ours.batch_decode(sample_ids, skip_special_tokens=True) == expected == ["HELO!? !?", "BYE BYE"]
    # ... and with the CTC-correct order asked for, the blank separates the doubled letter
    ctc, _ = pretrained(tmp_path, added=["!", "?"], special={"cls_token": "$$$"}, drop_pad_before_grouping=False)
    assert ctc.batch_decode(sample_ids, skip_special_tokens=True) == ["HELLO!? !?", "BYE BYE"]


def test_special_characters_in_vocab(tmp_path):
    sent = "ʈʰ æ æ̃ ˧ kʰ"
    vocab_dict = {k: v for v, k in enumerate(set(sent.split()))}
    folder = tmp_path / "special"
    folder.mkdir()
    (folder / "vocab.json").write_text(json.dumps(vocab_dict))
    theirs = Wav2Vec2CTCTokenizer(str(folder / "vocab.json"))
    ids = theirs(sent).input_ids  # transformers' encode: the kind is decode-only
    # (a bare vocab.json without a word delimiter is not resolved as a CTC vocabulary: named)
    ours = Wav2Vec2CTCDecoder(build_tokenizer(TokenizerSpec("wav2vec2", {"vocab": str(folder / "vocab.json")})))
    assert ours.decode(ids, spaces_between_special_tokens=True) == sent
    theirs.save_pretrained(str(tmp_path / "special_tokenizer"))
    ours = Wav2Vec2CTCDecoder(oasr_tok.load(str(tmp_path / "special_tokenizer")))
    assert ours.decode(ids, spaces_between_special_tokens=True) == sent


def test_offsets(tmp_path):
    ours, theirs = setup_tokenizer(tmp_path)
    # HEEEEE||LLL<pad>LO<unk> => HE LLO<unk>
    sample_ids = [11, 5, 5, 5, 5, 5, 4, 4, 15, 15, 15, ours.pad_token_id, 15, 8, 98]
    outputs_char = ours.decode(sample_ids, output_char_offsets=True)
    assert len(outputs_char.keys()) == 2 and "text" in outputs_char and "char_offsets" in outputs_char
    assert isinstance(outputs_char, CTCDecoderOutput)
    outputs_word = ours.decode(sample_ids, output_word_offsets=True)
    assert len(outputs_word.keys()) == 2 and "text" in outputs_word and "word_offsets" in outputs_word
    outputs = ours.decode(sample_ids, output_char_offsets=True, output_word_offsets=True)
    assert len(outputs.keys()) == 3
    assert {"text", "char_offsets", "word_offsets"} <= set(outputs)
    assert "".join(get_from_offsets(outputs["char_offsets"], "char")) == outputs.text
    assert get_from_offsets(outputs["char_offsets"], "char") == ["H", "E", " ", "L", "L", "O", "<unk>"]
    assert get_from_offsets(outputs["char_offsets"], "char") == get_from_offsets(outputs_char["char_offsets"], "char")
    assert " ".join(get_from_offsets(outputs["word_offsets"], "word")) == outputs.text
    assert get_from_offsets(outputs["word_offsets"], "word") == ["HE", "LLO<unk>"]
    assert get_from_offsets(outputs["word_offsets"], "word") == get_from_offsets(outputs_word["word_offsets"], "word")
    assert get_from_offsets(outputs["char_offsets"], "start_offset") == [0, 1, 6, 8, 12, 13, 14]
    assert get_from_offsets(outputs["char_offsets"], "end_offset") == [1, 6, 8, 11, 13, 14, 15]
    assert get_from_offsets(outputs["word_offsets"], "start_offset") == [0, 8]
    assert get_from_offsets(outputs["word_offsets"], "end_offset") == [6, 15]
    reference = theirs.decode(sample_ids, output_char_offsets=True, output_word_offsets=True)
    assert (outputs.text, outputs.char_offsets, outputs.word_offsets) == (
        reference.text,
        reference.char_offsets,
        reference.word_offsets,
    )


def test_word_offsets_from_char_offsets():
    char_offsets = [
        {"char": "H", "start_offset": 0, "end_offset": 1},
        {"char": "I", "start_offset": 1, "end_offset": 2},
        {"char": " ", "start_offset": 2, "end_offset": 3},
        {"char": "L", "start_offset": 3, "end_offset": 4},
        {"char": "I", "start_offset": 4, "end_offset": 5},
    ]
    assert word_offsets_from_char_offsets(char_offsets, " ") == [
        {"word": "HI", "start_offset": 0, "end_offset": 2},
        {"word": "LI", "start_offset": 3, "end_offset": 5},
    ]
    # Double spaces don't get counted
    char_offsets = [
        {"char": " ", "start_offset": 0, "end_offset": 1},
        {"char": "H", "start_offset": 1, "end_offset": 2},
        {"char": "I", "start_offset": 2, "end_offset": 3},
        {"char": " ", "start_offset": 3, "end_offset": 4},
        {"char": " ", "start_offset": 4, "end_offset": 5},
        {"char": "L", "start_offset": 5, "end_offset": 6},
        {"char": "I", "start_offset": 6, "end_offset": 7},
        {"char": "I", "start_offset": 7, "end_offset": 8},
        {"char": " ", "start_offset": 8, "end_offset": 9},
        {"char": " ", "start_offset": 9, "end_offset": 10},
    ]
    assert word_offsets_from_char_offsets(char_offsets, " ") == [
        {"word": "HI", "start_offset": 1, "end_offset": 3},
        {"word": "LII", "start_offset": 5, "end_offset": 8},
    ]
    assert Wav2Vec2CTCTokenizer._get_word_offsets(char_offsets, " ") == word_offsets_from_char_offsets(char_offsets)


def test_offsets_batch(tmp_path):
    ours, theirs = setup_tokenizer(tmp_path)
    pad, bar = ours.pad_token_id, ours.word_delimiter_token_id
    sample_ids = [
        [11, 5, 15, pad, 15, 4, 8, 98, 32, 32, 32, 32, 4, 33, bar, 32, 32, 33, 34, 34],
        [24, 22, 5, bar, bar, 24, 22, 22, 22, 4, 5, 77, pad, 22, 22, 4, 34, 34, 34, 34],
    ]

    def check_list_tuples_equal(outputs_batch, outputs_list):
        assert isinstance(outputs_batch, CTCDecoderOutput) and isinstance(outputs_list[0], CTCDecoderOutput)
        assert outputs_batch["text"] == [o["text"] for o in outputs_list]
        for key in ("char_offsets", "word_offsets"):
            if key in outputs_batch:
                assert outputs_batch[key] == [o[key] for o in outputs_list]

    for options in ({"output_char_offsets": True}, {"output_word_offsets": True}):
        check_list_tuples_equal(
            ours.batch_decode(sample_ids, **options), [ours.decode(i, **options) for i in sample_ids]
        )
    both = {"output_char_offsets": True, "output_word_offsets": True}
    outputs = ours.batch_decode(sample_ids, **both)
    check_list_tuples_equal(outputs, [ours.decode(i, **both) for i in sample_ids])
    reference = theirs.batch_decode(sample_ids, **both)
    assert (outputs.text, outputs.char_offsets, outputs.word_offsets) == (
        reference["text"],
        reference["char_offsets"],
        reference["word_offsets"],
    )


# The greedy ids of facebook/wav2vec2-base-960h on common_voice_en_100038 (the upstream test's).
# fmt: off
PRED_IDS = [[0] * 71 + [18, 11, 0, 0, 0, 22, 0, 0, 4, 4, 4, 14, 0, 0, 0, 0, 0, 8, 8, 0, 5, 5, 0, 12, 0, 4, 4, 4, 4, 4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 17, 0, 0, 10, 0, 0, 0, 15, 0, 0, 10, 0, 0, 0, 12, 0, 0, 0, 0, 0, 7, 0, 9, 0, 0, 14, 0, 0, 0, 13, 0, 7, 0, 0, 4, 4, 0, 15, 8, 8, 0, 0, 8, 0, 26, 0, 0, 4, 4, 0, 0, 15, 0, 0, 0, 0, 0, 0, 10, 0, 26, 5, 5, 0, 4, 4, 0, 0, 12, 11, 0, 0, 5, 4, 4, 4, 0, 18, 0, 0, 0, 7, 9, 9, 0, 6, 0, 12, 12, 4, 4, 0, 6, 0, 0, 8, 0, 4, 4, 4, 0, 19, 0, 0, 8, 9, 9, 0, 0, 0, 0, 12, 12, 0, 0, 0, 0, 0, 0, 0, 16, 16, 0, 0, 17, 5, 5, 5, 0, 4, 4, 4, 0, 0, 29, 29, 0, 0, 0, 0, 8, 11, 0, 9, 9, 0, 0, 0, 4, 4, 0, 12, 12, 0, 0, 0, 9, 0, 0, 0, 0, 0, 8, 18, 0, 0, 0, 4, 4, 0, 0, 8, 9, 0, 4, 4, 0, 6, 11, 5, 0, 4, 4, 0, 13, 13, 0, 0, 0, 10, 0, 0, 25, 0, 0, 6, 0, 4, 4, 0, 0, 0, 0, 7, 0, 0, 23, 0, 0, 4, 4, 0, 0, 0, 6, 11, 0, 5, 4, 4, 18, 0, 0, 0, 0, 0, 0, 7, 15, 0, 0, 0, 15, 15, 0, 4, 4, 4] + [0] * 38]
# fmt: on


def test_offsets_integration(tmp_path):
    ours, theirs = pretrained(tmp_path)
    time_offset_wav2vec2_base = 320 / 16_000
    expected_word_time_stamps_text = ["WHY", "DOES", "MILISANDRA", "LOOK", "LIKE", "SHE", "WANTS", "TO", "CONSUME", "JOHN", "SNOW", "ON", "THE", "RIVT", "AP", "THE", "WALL"]  # fmt: skip
    expected_word_time_stamps_start = [1.42, 1.64, 2.26, 3.0, 3.28, 3.62, 3.8, 4.1, 4.28, 4.94, 5.28, 5.68, 5.8, 5.94, 6.32, 6.54, 6.66]  # fmt: skip
    expected_word_time_stamps_end = [1.54, 1.9, 2.9, 3.16, 3.52, 3.72, 4.04, 4.18, 4.82, 5.16, 5.54, 5.72, 5.86, 6.18, 6.4, 6.62, 6.94]  # fmt: skip
    expected_char_time_stamps_text = list(
        "WHY DOES MILISANDRA LOOK LIKE SHE WANTS TO CONSUME JOHN SNOW ON THE RIVT AP THE WALL "
    )
    output = ours.batch_decode(PRED_IDS, output_char_offsets=True, output_word_offsets=True)
    char_offsets_text = get_from_offsets(output["char_offsets"][0], "char")
    word_offsets = output["word_offsets"][0]
    assert char_offsets_text == expected_char_time_stamps_text
    assert get_from_offsets(word_offsets, "word") == expected_word_time_stamps_text
    starts = [round(w * time_offset_wav2vec2_base, 2) for w in get_from_offsets(word_offsets, "start_offset")]
    ends = [round(w * time_offset_wav2vec2_base, 2) for w in get_from_offsets(word_offsets, "end_offset")]
    assert starts == expected_word_time_stamps_start and ends == expected_word_time_stamps_end
    # the character times: transformers' own in this run (the upstream lists hold 85 of each)
    reference = theirs.batch_decode(PRED_IDS, output_char_offsets=True, output_word_offsets=True)
    assert output["char_offsets"] == reference["char_offsets"] and output["word_offsets"] == reference["word_offsets"]
    # the library's own path says the same: collapse_ctc, then word_offsets
    tok = ours.tokenizer
    ids, frame_starts, frame_ends = oasr_tok.collapse_ctc(PRED_IDS[0], tok.blank_id)
    assert [(w.text, w.start, w.end) for w in tok.word_offsets(ids, frame_starts, frame_ends)] == [
        (o["word"], o["start_offset"], o["end_offset"]) for o in word_offsets
    ]


def test_convert_tokens_to_string_format(tmp_path):
    ours, _ = setup_tokenizer(tmp_path, do_lower_case=True)
    tokens = ["T", "H", "I", "S", "|", "I", "S", "|", "A", "|", "T", "E", "X", "T"]
    output = ours.convert_tokens_to_string(tokens)
    assert isinstance(output["text"], str) and output["text"] == "this is a text"


def test_nested_vocab(tmp_path):
    eng_vocab = {"a": 7, "b": 8}
    spa_vocab = {"a": 23, "c": 88}
    ita_vocab = {"a": 6, "d": 9}
    nested_vocab = {"eng": eng_vocab, "spa": spa_vocab, "ita": ita_vocab}
    path = tmp_path / "vocab.json"
    path.write_text(json.dumps(nested_vocab))

    def for_language(lang):
        tok = build_tokenizer(TokenizerSpec("wav2vec2", {"vocab": str(path)}, {"target_lang": lang}))
        return Wav2Vec2CTCDecoder(tok)

    # set_target_lang is a tokenizer per language here (a spec option)
    assert for_language("eng").decode([7, 8, 7]) == "aba"
    assert for_language("spa").decode([23, 88, 23]) == "aca"
    assert for_language("eng").decode([7, 7, 8]) == "ab"
    assert for_language("ita").decode([6, 9, 9]) == "ad"
    # "encoder" is transformers' table: ours reads the same pieces at the same ids
    for lang, table in nested_vocab.items():
        tok = for_language(lang).tokenizer
        assert {tok.id_to_piece(i): i for i in table.values()} == table
    # save_pretrained kept target_lang "ita": read from the config, it is the default
    theirs = Wav2Vec2CTCTokenizer.from_pretrained(str(tmp_path), target_lang="eng")
    theirs.set_target_lang("ita")
    theirs.save_pretrained(str(tmp_path / "saved"))
    assert Wav2Vec2CTCDecoder(oasr_tok.load(str(tmp_path / "saved"))).decode([6, 9, 9]) == "ad"


# -- the face's own choices ---------------------------------------------------------------------


def test_an_id_past_every_table_raises_unless_the_unknown_token_is_asked_for(tmp_path):
    ours, theirs = pretrained(tmp_path)
    strict = Wav2Vec2CTCDecoder(ours.tokenizer)
    with pytest.raises(InvalidIdError, match="98"):
        strict.decode([11, 5, 98])
    assert ours.decode([11, 5, 98]) == theirs.decode([11, 5, 98]) == "HE<unk>"
    assert ours.convert_ids_to_tokens(np.array([11, 98])) == theirs.convert_ids_to_tokens([11, 98])
    with pytest.raises(InvalidIdError):
        ours.decode([11, -1])


_PAIRS: dict = {}


def _random_pair(name):
    if name not in _PAIRS:
        folder = own(f"wav2vec2/{name}")
        theirs = Wav2Vec2CTCTokenizer.from_pretrained(folder)
        ours = Wav2Vec2CTCDecoder(oasr_tok.load(folder), unknown_ids="unk")
        _PAIRS[name] = (ours, theirs)
    return _PAIRS[name]


@pytest.mark.parametrize("name", ["base-960h", "lower-case"])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_every_option_equals_transformers_on_random_frames(name, data):
    """Beyond the upstream cases: random frame ids (blank runs, delimiters, unknown and
    out-of-range ids) through every option, against transformers in the same run."""
    ours, theirs = _random_pair(name)
    size = ours.tokenizer.vocab_size
    frame = st.integers(0, size + 3) | st.sampled_from([ours.pad_token_id, ours.word_delimiter_token_id, 3])
    ids = data.draw(st.lists(frame, max_size=60), label="ids")
    options = {
        "skip_special_tokens": data.draw(st.booleans()),
        "group_tokens": data.draw(st.booleans()),
        "spaces_between_special_tokens": data.draw(st.booleans()),
        "output_char_offsets": data.draw(st.booleans()),
        "output_word_offsets": data.draw(st.booleans()),
    }
    got, expected = ours.decode(ids, **options), theirs.decode(ids, **options)
    if isinstance(expected, str):
        assert got == expected
    else:
        assert (got.text, got.char_offsets, got.word_offsets) == (
            expected.text,
            expected.char_offsets,
            expected.word_offsets,
        )
