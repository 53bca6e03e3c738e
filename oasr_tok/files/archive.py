"""Files inside archives: how a TokenizerSpec names a member of a NeMo `.nemo` checkpoint.

A `.nemo` file is a tar (plain since NeMo 1.7, gzip before) of `model_config.yaml`, the
weights and the tokenizer artifacts, stored as `./<32 hex>_<name>` and referenced from the
config as `nemo:<32 hex>_<name>`. A real archive is gigabytes of weights, so nothing is ever
extracted: a member is read straight out of the tar, and only the members a spec names.

A spec names a member as ``<archive path>::<member name>``, e.g.
``/models/parakeet.nemo::9a1b...e2_tokenizer.model``. That is an ordinary string, so it
survives ``to_dict`` / ``from_dict`` (relative paths included: the member part rides along
with the file name), pickling to another process and ``tokenizer_spec.json``, and nothing is
ever written next to the archive. A path is a member reference only when the whole string is
not an existing file and the part before the last ``::`` is one.
"""

from __future__ import annotations

import os
import tarfile
from collections.abc import Iterator
from typing import Any

from ..errors import AssetNotFoundError, MalformedAssetError, short_repr

__all__ = [
    "MEMBER_SEPARATOR",
    "member_ref",
    "split_member",
    "read_member",
    "member_names",
    "is_archive_ref",
    "nemo_config",
    "nemo_labels_table",
    "LABELS_SELECTOR",
]

#: A member name ending in this selects a NeMo character model's labels out of its config,
#: as a `piece id` table (``model.nemo::model_config.yaml#labels``).
LABELS_SELECTOR = "#labels"


MEMBER_SEPARATOR = "::"


def member_ref(archive: str, member: str) -> str:
    """The path string naming `member` of `archive`."""
    return f"{archive}{MEMBER_SEPARATOR}{_plain(member)}"


def split_member(path: str) -> tuple[str, str] | None:
    """(archive, member) when `path` names an archive member, else None."""
    if MEMBER_SEPARATOR not in path or os.path.exists(path):
        return None
    archive, member = path.rsplit(MEMBER_SEPARATOR, 1)
    if not member or not os.path.isfile(archive):
        return None
    return archive, member


def is_archive_ref(path: str) -> bool:
    return split_member(path) is not None


def _plain(name: str) -> str:
    # SaveRestoreConnector adds the folder as ".", so members are "./<name>".
    return name[2:] if name.startswith("./") else name


def _open(archive: str) -> tarfile.TarFile:
    try:
        # "r:*" reads plain and gzip tars alike; in plain ones tarfile seeks over member data.
        return tarfile.open(archive, "r:*")
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise MalformedAssetError(
            f"{archive}: not a readable tar archive (a .nemo file is one): {exc}", path=archive
        ) from None


def _members(archive: str, handle: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    try:
        yield from handle
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise MalformedAssetError(f"{archive}: the tar archive is truncated or corrupt: {exc}", path=archive) from None


def member_names(archive: str) -> list[str]:
    """The names of the regular files in `archive` (without the leading "./")."""
    with _open(archive) as handle:
        return [_plain(info.name) for info in _members(archive, handle) if info.isfile()]


def read_member(path: str, what: str, limit: int = 256 << 20) -> bytes:
    """The bytes of the member `path` names (``archive::member``). Reads the tar headers up
    to that member and that member only. AssetNotFoundError naming archive and member when
    it is not there; MalformedAssetError when the archive is truncated, or the member is
    larger than `limit` (a tokenizer file is megabytes; the weights are not read)."""
    split = split_member(path)
    if split is None:
        raise AssetNotFoundError(f"{what} file not found: {path!r}", path=path)
    archive, member = split
    if member.endswith(LABELS_SELECTOR):
        return nemo_labels_table(archive, member[: -len(LABELS_SELECTOR)]).encode("utf-8")
    wanted = _plain(member)
    with _open(archive) as handle:
        for info in _members(archive, handle):
            if _plain(info.name) != wanted:
                continue
            if not info.isfile():
                raise MalformedAssetError(f"{archive}: member {wanted!r} ({what}) is not a regular file", path=path)
            if info.size > limit:
                raise MalformedAssetError(
                    f"{archive}: member {wanted!r} ({what}) claims {info.size} bytes, more than a tokenizer file "
                    f"can be ({limit}); refusing to read it",
                    path=path,
                )
            stream = handle.extractfile(info)
            try:
                data = stream.read() if stream is not None else b""
            except (tarfile.TarError, EOFError, OSError) as exc:
                raise MalformedAssetError(
                    f"{archive}: member {wanted!r} ({what}) is truncated: {exc}", path=path
                ) from None
            if len(data) != info.size:
                raise MalformedAssetError(
                    f"{archive}: member {wanted!r} ({what}) is truncated ({len(data)} of {info.size} bytes)", path=path
                )
            return data
    raise AssetNotFoundError(f"{archive}: no member {wanted!r} ({what}) in the archive", path=path)


def nemo_config(archive: str, member: str = "model_config.yaml") -> dict:
    """The parsed model_config.yaml of a .nemo archive (PyYAML, the `nemo` extra)."""
    try:
        import yaml
    except ImportError as exc:
        from ..errors import BackendNotInstalledError

        raise BackendNotInstalledError(
            f"reading {archive} needs PyYAML for its model_config.yaml ({exc}); install it with: "
            "pip install 'oasr_tok[nemo]'"
        ) from exc
    raw = read_member(member_ref(archive, member), "NeMo model config")

    class _NoAliases(yaml.SafeLoader):
        # NeMo writes its configs with OmegaConf, which never uses YAML aliases; a file that does
        # can make a few hundred bytes stand for gigabytes (a "billion laughs"), so it is refused.
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                mark = self.peek_event().start_mark
                raise yaml.YAMLError(f"line {mark.line + 1}: a YAML alias (*name); NeMo configs have none")
            return super().compose_node(parent, index)

    try:
        config = yaml.load(raw.decode("utf-8"), Loader=_NoAliases)  # a SafeLoader: no arbitrary objects
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise MalformedAssetError(
            f"{archive}: member {member!r} is not valid YAML: {short_repr(str(exc))}", path=archive
        ) from None
    except RecursionError:
        raise MalformedAssetError(f"{archive}: member {member!r} is nested too deeply", path=archive) from None
    if not isinstance(config, dict):
        raise MalformedAssetError(f"{archive}: member {member!r} does not hold a mapping", path=archive)
    return config


def nemo_labels_table(archive: str, member: str = "model_config.yaml") -> str:
    """A character model's labels (``labels``, or ``decoder.vocabulary``) as `piece id` lines,
    with the CTC/RNNT blank appended after them, as NeMo places it (id = len(labels)). A space
    label is written as a line holding only its id (the symbol table's spelling of a space)."""
    config = nemo_config(archive, member)
    labels = config.get("labels")
    if labels is None and isinstance(config.get("decoder"), dict):
        labels = config["decoder"].get("vocabulary")
    if not isinstance(labels, list) or not labels or not all(isinstance(x, str) and x for x in labels):
        raise MalformedAssetError(
            f"{archive}: member {member!r} has no character labels (labels / decoder.vocabulary must list strings)",
            path=archive,
        )
    if len(set(labels)) != len(labels):
        twice = next(x for x in labels if labels.count(x) > 1)
        raise MalformedAssetError(f"{archive}: member {member!r}: the label {twice!r} is given twice", path=archive)
    if any(x.strip() != x and x != " " or (" " in x and x != " ") for x in labels):
        raise MalformedAssetError(
            f"{archive}: member {member!r}: labels other than ' ' may not contain spaces", path=archive
        )
    lines = [str(i) if x == " " else f"{x} {i}" for i, x in enumerate(labels)]
    lines.append(f"<blk> {len(labels)}")
    return "\n".join(lines) + "\n"
