"""A plain port of NeMo's AggregateTokenizer and CanaryTokenizer decoding, kept beside the
original so a reviewer can compare them (NVIDIA/NeMo, Apache-2.0):

* nemo/collections/common/tokenizers/aggregate_tokenizer.py at commit
  ad3ddcb977e468369c062ebc931dc661bd297a4a — the offsets (`token_id_offset`, cumulative
  `len(tokenizer.vocab)` in dict order), `_calculate_offsets`, `ids_to_text`, `ids_to_tokens`,
  `ids_to_lang`, `text_to_ids`;
* nemo/collections/common/tokenizers/canary_tokenizer.py at commit
  ddbb86a826db0e045a2fae2162e4820b049e4c96 — `special_tokens` (the `<|…|>` pieces and
  `<pad>` of the special model) and `_tokenize_special_prompt`;
* nemo/collections/common/tokenizers/sentencepiece_tokenizer.py at commit
  49bd6eb4f1f106f8856acedb4a7a2da68a242dd4 — the non-legacy `ids_to_tokens` (`id_to_piece`)
  and `vocab` (every piece) that the aggregate uses;
* nemo/collections/common/prompts/canary2.py at commit 546d84f298897ebf68ae998e6dfc4a8141f6041a
  — the user-turn template of Canary2PromptFormatter with its default slots.

Torch and numpy conversions are left out (ids arrive as lists). Quirks kept: ids_to_text keeps
the leading space of the first word, keeps `<0xNN>` and control pieces literally, and decodes
the special model's tokens like any other (oasr_tok drops them first: the reference is
applied to the ids left after the special ids are removed).
"""

from __future__ import annotations

import sentencepiece as spm


class SentencePieceTokenizer:
    """The parts of NeMo's non-legacy SentencePieceTokenizer the aggregate calls."""

    def __init__(self, model_proto: bytes) -> None:
        self.tokenizer = spm.SentencePieceProcessor()
        self.tokenizer.LoadFromSerializedProto(model_proto)
        self.original_vocab_size = self.tokenizer.get_piece_size()
        self.vocab_size = self.tokenizer.get_piece_size()

    def text_to_ids(self, text):
        return self.tokenizer.encode_as_ids(text)

    def ids_to_tokens(self, ids):
        return [self.tokenizer.id_to_piece(i) for i in ids]

    def token_to_id(self, token):
        return self.tokenizer.piece_to_id(token)

    @property
    def vocab(self):
        return [self.tokenizer.id_to_piece(i) for i in range(self.tokenizer.get_piece_size())]


class AggregateTokenizer:
    def __init__(self, tokenizers: dict) -> None:
        self.tokenizers_dict = tokenizers
        self.vocabulary = []
        self.token_id_offset = {}
        self.token_id_offset_by_tokenizer_num = {}
        offset = 0
        i = 0
        for lang, tokenizer in self.tokenizers_dict.items():
            self.token_id_offset[lang] = offset
            self.token_id_offset_by_tokenizer_num[i] = offset
            offset += len(tokenizer.vocab)
            i += 1
        for tokenizer in self.tokenizers_dict.values():
            self.vocabulary.extend(tokenizer.vocab)
        self.vocab_size = len(self.vocabulary)
        offsets, tokenizers_by_id, langs = self._calculate_offsets()
        self.offset_token_ids_by_token_id = offsets
        self.tokenizers_by_token_id = tokenizers_by_id
        self.langs_by_token_id = langs

    def _calculate_offsets(self):
        offsets = {}
        tokenizers = {}
        langs = {}
        cur_num = 0
        tot = len(self.tokenizers_dict)
        for id in range(len(self.vocabulary)):
            off_id = id - list(self.token_id_offset.values())[cur_num]
            if cur_num + 1 < tot:
                if id >= list(self.token_id_offset.values())[cur_num + 1]:
                    cur_num += 1
                    off_id = id - list(self.token_id_offset.values())[cur_num]
            offsets[id] = off_id
            tokenizers[id] = list(self.tokenizers_dict.values())[cur_num]
            langs[id] = list(self.tokenizers_dict.keys())[cur_num]
        return offsets, tokenizers, langs

    def text_to_ids(self, text, lang_id):
        tokenizer = self.tokenizers_dict[lang_id]
        token_ids = tokenizer.text_to_ids(text)
        token_ids[:] = [t + self.token_id_offset[lang_id] for t in token_ids]
        return token_ids

    def ids_to_text(self, ids):
        tokens = []
        for id in ids:
            offset_id = self.offset_token_ids_by_token_id[id]
            tokenizer = self.tokenizers_by_token_id[id]
            tokens.extend(tokenizer.ids_to_tokens([offset_id]))
        text = "".join(tokens).replace("▁", " ")
        return text

    def token_to_id(self, token, lang_id):
        tokenizer = self.tokenizers_dict[lang_id]
        return tokenizer.token_to_id(token) + self.token_id_offset[lang_id]

    def ids_to_tokens(self, ids):
        tokens = []
        for id in ids:
            offset_id = self.offset_token_ids_by_token_id[id]
            tokenizer = self.tokenizers_by_token_id[id]
            token = tokenizer.ids_to_tokens([offset_id])[0]
            tokens.append(token)
        return tokens

    def ids_to_lang(self, ids):
        lang_cnts = {}
        for id in ids:
            lang = self.langs_by_token_id[id]
            lang_cnt = lang_cnts.get(lang)
            if lang_cnt is not None:
                lang_cnts[lang] = lang_cnt + 1
            else:
                lang_cnts[lang] = 1
        max_lang = ""
        max_lang_cnt = -1
        for lang, lang_cnt in lang_cnts.items():
            if lang_cnt > max_lang_cnt:
                max_lang = lang
                max_lang_cnt = lang_cnt
        return max_lang


CANARY_BOS = "<|startoftranscript|>"
CANARY_PAD = "<pad>"
CANARY_SPECIAL_TOKENIZER = "spl_tokens"
CANARY2_BOCTX = "<|startofcontext|>"


class CanaryTokenizer(AggregateTokenizer):
    def __init__(self, tokenizers: dict) -> None:
        super().__init__(tokenizers)
        self.special_tokens = {}
        for special in tokenizers[CANARY_SPECIAL_TOKENIZER].vocab:
            if (special.startswith("<|") and special.endswith("|>")) or special == CANARY_PAD:
                self.special_tokens[special] = self.token_to_id(special, lang_id=CANARY_SPECIAL_TOKENIZER)

    def _tokenize_special_prompt(self, text: str) -> list[int]:
        ans = []
        assert text.count(">") == 5, f"Expected exactly 5 special tokens in Canary's prompt, got: {text}."
        assert text.startswith(CANARY_BOS), text
        for _ in range(5):
            token = text[: text.find(">") + 1]
            ans.append(self.special_tokens[token])
            text = text[len(token) :]
        assert len(text) == 0, text
        return ans


def canary2_user_turn(
    source_lang,
    target_lang,
    pnc="<|pnc|>",
    itn="<|noitn|>",
    timestamp="<|notimestamp|>",
    diarize="<|nodiarize|>",
    emotion="<|emo:undefined|>",
    decodercontext="",
):
    """Canary2PromptFormatter's user template filled with its slots (default slots from canary2())."""
    src = source_lang if source_lang.startswith("<|") else f"<|{source_lang}|>"
    tgt = target_lang if target_lang.startswith("<|") else f"<|{target_lang}|>"
    return f"{CANARY2_BOCTX}{decodercontext}{CANARY_BOS}{emotion}{src}{tgt}{pnc}{itn}{timestamp}{diarize}"
