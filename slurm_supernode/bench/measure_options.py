"""Parsing of what the benchmark measures: message sizes, dtypes, collectives, scopes.

Sizes follow nccl-tests: ``K``/``M``/``G`` are binary (1K = 1024 bytes), a range ``1K-1G``
steps by a factor (2 unless told). Bad input raises ``InputError`` naming the option.
"""

from __future__ import annotations

from slurm_supernode.bench.model import COLLECTIVES, DTYPES, SCOPES
from slurm_supernode.errors import InputError

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_DTYPE_ALIASES = {
    "float32": "float32",
    "float": "float32",
    "fp32": "float32",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "half": "float16",
    "fp16": "float16",
}


def parse_size(text: str, *, where: str = "--sizes") -> int:
    """``"64M"`` -> 67108864. Accepts ``K``, ``KB``, ``KiB`` (all binary) and plain bytes."""
    raw = text.strip()
    body = raw.upper().removesuffix("IB").removesuffix("B") if raw else raw
    unit = body[-1:] if body[-1:].isalpha() else ""
    number = body[: len(body) - len(unit)]
    if unit not in _UNITS or not number:
        raise InputError(f"bad size {text!r}", where=where, hint="e.g. 1024, 64K, 1M, 4G")
    try:
        value = float(number)
    except ValueError:
        raise InputError(f"bad size {text!r}", where=where, hint="e.g. 1024, 64K, 1M, 4G") from None
    size = int(value * _UNITS[unit])
    if size <= 0 or size != value * _UNITS[unit]:
        raise InputError(f"size {text!r} must be a positive whole number of bytes", where=where)
    return size


def size_sweep(min_bytes: int, max_bytes: int, factor: float = 2, *, where: str = "--sizes"):
    """Sizes from ``min_bytes`` to ``max_bytes`` inclusive, multiplying by ``factor``."""
    if min_bytes <= 0 or max_bytes < min_bytes:
        raise InputError(
            f"empty size range {min_bytes}..{max_bytes}", where=where, hint="min <= max, both > 0"
        )
    if factor <= 1:
        raise InputError(f"factor {factor} must be > 1", where="--factor")
    sizes = []
    size = float(min_bytes)
    while size <= max_bytes:
        sizes.append(int(size))
        size *= factor
    return tuple(sizes)


def parse_sizes(text: str, factor: float = 2) -> tuple[int, ...]:
    """``"1K-1G"``, ``"1K,4K,1M"`` or a mix (``"1K-64K,1G"``): sorted, without duplicates."""
    sizes: set[int] = set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if "-" in part:
            low, _, high = part.partition("-")
            sizes.update(size_sweep(parse_size(low), parse_size(high), factor))
        else:
            sizes.add(parse_size(part))
    if not sizes:
        raise InputError(f"no sizes in {text!r}", where="--sizes", hint="e.g. 1K-1G")
    return tuple(sorted(sizes))


def parse_dtypes(text: str) -> tuple[str, ...]:
    """``"bf16,float32"`` -> ``("bfloat16", "float32")`` (order kept, duplicates dropped)."""
    out: list[str] = []
    for part in (p.strip().lower() for p in text.split(",")):
        if not part:
            continue
        if part not in _DTYPE_ALIASES:
            raise InputError(f"unknown dtype {part!r}", where="--dtype", hint=", ".join(DTYPES))
        if _DTYPE_ALIASES[part] not in out:
            out.append(_DTYPE_ALIASES[part])
    if not out:
        raise InputError("no dtype given", where="--dtype", hint=", ".join(DTYPES))
    return tuple(out)


def parse_choices(text: str, allowed: tuple[str, ...], *, where: str) -> tuple[str, ...]:
    """A comma list of names from ``allowed`` (``all`` for every one), in ``allowed`` order."""
    names = {p.strip().lower().replace("-", "_") for p in text.split(",") if p.strip()}
    aliases = {"alltoall": "all_to_all", "allreduce": "all_reduce", "allgather": "all_gather"}
    names = {aliases.get(n, n) for n in names}
    if "all" in names:
        return allowed
    unknown = sorted(names - set(allowed))
    if unknown or not names:
        raise InputError(
            f"unknown choice {', '.join(unknown) or '(empty)'}",
            where=where,
            hint="one or more of " + ", ".join(allowed) + ", or all",
        )
    return tuple(a for a in allowed if a in names)


def parse_collectives(text: str) -> tuple[str, ...]:
    return parse_choices(text, COLLECTIVES, where="--collectives")


def parse_scopes(text: str) -> tuple[str, ...]:
    return parse_choices(text, SCOPES, where="--scopes")


def format_size(size: int) -> str:
    """1048576 -> ``"1M"``; sizes that are not a whole unit stay in bytes."""
    for unit in ("T", "G", "M", "K"):
        if size >= _UNITS[unit] and size % _UNITS[unit] == 0:
            return f"{size // _UNITS[unit]}{unit}"
    return str(size)
