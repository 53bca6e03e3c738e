"""Which tokenizer a NeMo ``.nemo`` archive holds, read from its members without extracting
the weights: its model_config.yaml's ``tokenizer.type`` — ``bpe`` -> sentencepiece on the
archive's tokenizer.model, ``wpe`` -> wordpiece on its vocab.txt, ``agg`` -> aggregate
(Canary); no tokenizer but ``labels`` / ``decoder.vocabulary`` -> symbol_table of the labels.
Members are named ``archive::member`` (archive.py). This is the detector resolution asks for
archives, after every kind's own (registry.py)."""

from __future__ import annotations

import os
from typing import Any

from ..errors import MalformedAssetError, ResolveError, short_repr
from ..files.archive import member_names, member_ref, nemo_config, nemo_labels_table
from ..files.detection import Detected, Found, SetAside, folder_names
from ..kinds.sentencepiece import load_processor

__all__ = ["detect"]


def _found(path: str) -> Found:
    """The tokenizer a .nemo archive's config names, from its members (never the weights)."""

    name = os.path.basename(path)
    present = member_names(path)
    if "model_config.yaml" not in present:
        raise MalformedAssetError(
            f"{path}: no member 'model_config.yaml' in the archive (members: {', '.join(present[:8]) or 'none'})",
            path=path,
        )
    config = nemo_config(path)
    used = ["model_config.yaml"]

    def member(ref: Any, key: str) -> str:
        if not isinstance(ref, str) or not ref.startswith("nemo:"):
            raise MalformedAssetError(
                f"{path}: model_config.yaml {key} is {short_repr(ref)}, not a nemo:<member> reference "
                "to a file inside the archive",
                path=path,
            )
        wanted = ref[len("nemo:") :]
        if wanted not in present:
            raise MalformedAssetError(
                f"{path}: model_config.yaml {key} points to {short_repr(ref)}, which is not a member of the archive",
                path=path,
            )
        used.append(wanted)
        return member_ref(path, wanted)

    tokenizer = config.get("tokenizer")
    timing = {}
    stride = (
        (config.get("preprocessor") or {}).get("window_stride")
        if isinstance(config.get("preprocessor"), dict)
        else None
    )
    factor = (
        (config.get("encoder") or {}).get("subsampling_factor") if isinstance(config.get("encoder"), dict) else None
    )
    if isinstance(stride, (int, float)) and not isinstance(stride, bool) and stride > 0:
        timing["window_stride"] = stride
    if isinstance(factor, int) and not isinstance(factor, bool) and factor > 0:
        timing["subsampling_factor"] = factor
    if tokenizer is None:
        units = member_ref(path, "model_config.yaml#labels")
        blank = len(nemo_labels_table(path).splitlines()) - 1
        found = Found("symbol_table", {"units": units}, {"special_ids": [blank]}, source=name)
        found.evidence.append(
            (
                "kind",
                f"symbol_table: a character model (no tokenizer in model_config.yaml; "
                f"{blank} labels from labels / decoder.vocabulary)",
            )
        )
        found.evidence.append(("special_ids", f"[{blank}]: the blank NeMo appends after the labels"))
    elif not isinstance(tokenizer, dict):
        raise MalformedAssetError(
            f"{path}: model_config.yaml tokenizer must be a mapping, got {short_repr(tokenizer)}", path=path
        )
    elif tokenizer.get("type") == "bpe":
        model = member(tokenizer.get("model_path"), "tokenizer.model_path")
        processor = load_processor(model)
        control = [i for i in range(processor.get_piece_size()) if processor.is_control(i)]
        found = Found("sentencepiece", {"model": model}, {"special_ids": control}, source=name)
        found.evidence.append(("kind", f"sentencepiece: tokenizer.type bpe, {processor.get_piece_size()} pieces"))
        found.evidence.append(
            (
                "special_ids",
                f"{control}: the control pieces (NeMo decodes <unk> as SentencePiece "
                f"does; the CTC/RNNT blank is id {processor.get_piece_size()}, after the vocabulary: "
                "collapse frames with collapse_ctc before decoding)",
            )
        )
    elif tokenizer.get("type") == "wpe":
        vocab = member(tokenizer.get("vocab_path"), "tokenizer.vocab_path")
        found = Found("wordpiece", {"vocab": vocab}, {}, source=name)
        found.evidence.append(("kind", "wordpiece: tokenizer.type wpe (a BERT vocab.txt)"))
    elif tokenizer.get("type") == "agg":
        langs = tokenizer.get("langs")
        if not isinstance(langs, dict) or not langs:
            raise MalformedAssetError(
                f"{path}: model_config.yaml tokenizer.langs must map languages to tokenizers", path=path
            )
        files = {}
        for lang, sub in langs.items():
            if not isinstance(sub, dict) or sub.get("type", "bpe") != "bpe":
                raise MalformedAssetError(
                    f"{path}: model_config.yaml tokenizer.langs.{lang} must be a bpe tokenizer", path=path
                )
            files[str(lang)] = member(sub.get("model_path"), f"tokenizer.langs.{lang}.model_path")
        options: dict[str, Any] = {"langs": list(files), **timing}
        custom = (
            str((tokenizer.get("custom_tokenizer") or {}).get("_target_", ""))
            if isinstance(tokenizer.get("custom_tokenizer"), dict)
            else ""
        )
        found = Found("aggregate", files, options, source=name)
        found.evidence.append(
            (
                "kind",
                f"aggregate: tokenizer.type agg, languages {', '.join(files)} in config order"
                + (f" ({custom.rsplit('.', 1)[-1]})" if custom else ""),
            )
        )
        found.evidence.append(
            (
                "special_ids",
                "the whole spl_tokens sub-vocabulary"
                if "spl_tokens" in files
                else "none (no spl_tokens sub-tokenizer)",
            )
        )
    else:
        raise ResolveError(
            f"{path}: model_config.yaml tokenizer.type {short_repr(tokenizer.get('type'))} is not one oasr_tok "
            "reads (bpe, wpe, agg; or a character model's labels)"
        )
    if found.kind != "aggregate" and timing:
        found.notes.append("frames to seconds: " + " x ".join(f"{k} {v}" for k, v in timing.items()))
    found.evidence.append(
        (
            "members",
            f"read: {', '.join(used)}; not read: " + (", ".join(m for m in present if m not in used) or "nothing else"),
        )
    )
    return found


def detect(path: str) -> list[Detected]:
    """The tokenizer of a single .nemo archive (given, or the only one in the folder)."""
    if not os.path.isdir(path):
        return [_found(path)] if path.endswith(".nemo") else []
    archives = [n for n in folder_names(path) if n.endswith(".nemo")]
    if len(archives) == 1:
        return [_found(os.path.join(path, archives[0]))]
    return [SetAside(name, "one of several .nemo archives; point at the one to use") for name in archives]
