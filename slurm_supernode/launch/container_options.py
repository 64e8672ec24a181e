"""The ``--container-*`` options of a job, as given: a user's (``JobSpec.container``, from the
command line, ``#SBATCH`` lines or the API) and those of the jobs snrun submits for itself
(bench, doctor, health's all-reduce). Kept as given (strings) until ``launch.container``
checks them against the site and the running Slurm (``ContainerSpec``, what plan.json keeps).
Pure; a schedule stores them (``to_dict``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_TEXT = ("image", "mounts", "workdir", "env", "name")
_FIELDS = ", ".join((*_TEXT, "mount_home"))


@dataclass(frozen=True)
class ContainerOptions:
    """``--container-image`` and its companions; all None: on the host (unless the site says
    otherwise for the job, e.g. ``bench.container_image``). The companions without an image
    are refused where the job is planned (``wanted_image``)."""

    image: str | None = None  # a path or a registry reference (launch.container checks it)
    mounts: str | None = None  # SRC[:DST[:ro]],...
    workdir: str | None = None
    env: str | None = None  # NAME,...
    name: str | None = None
    mount_home: bool | None = None  # None: the runtime's default

    def or_image(self, image: str) -> ContainerOptions:
        """These options with ``image`` where none was given ("": none to add)."""
        if self.image is not None or not image:
            return self
        return dataclasses.replace(self, image=image)

    def wanted_image(self) -> str | None:
        """The image the job runs in; None where no option was given. The companions alone
        are refused (they would be ignored silently): an InputError naming the first."""
        if self.image is not None:
            return self.image
        given = [
            f"--container-{k.replace('_', '-')}"
            for k, v in dataclasses.asdict(self).items()
            if v is not None
        ]
        if given:
            from slurm_supernode.errors import InputError

            raise InputError(
                f"{given[0]} without --container-image",
                where=given[0],
                hint="give the image with --container-image (or #SBATCH --container-image)",
            )
        return None

    def to_dict(self) -> dict[str, Any]:
        """The given options only (a stored schedule keeps them)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    @classmethod
    def of(cls, value: object) -> ContainerOptions:
        """``value`` as options: options, a mapping of their fields (a spec's ``container``,
        e.g. ``{"image": ..., "mounts": ...}``) or None (no image); anything else, an unknown
        key or a wrong type is an InputError: the API's jobs take any of these forms."""
        if isinstance(value, ContainerOptions):
            return value
        if value is None:
            return cls()
        from slurm_supernode.errors import InputError

        if not isinstance(value, Mapping):
            raise InputError(
                f"{value!r} is no ContainerOptions or mapping of its fields",
                where="container",
                hint="ContainerOptions(image=...) or {'image': ...}",
            )
        try:
            return cls.from_dict(value)
        except ValueError as exc:
            raise InputError(str(exc), where="container", hint=f"fields: {_FIELDS}") from None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ContainerOptions:
        """The inverse of ``to_dict``; ValueError on an unknown key or a wrong type."""
        unknown = sorted(set(data) - {*_TEXT, "mount_home"})
        if unknown:
            raise ValueError(f"unknown container option(s) {', '.join(unknown)}")
        for key in _TEXT:
            if data.get(key) is not None and not isinstance(data[key], str):
                raise ValueError(f"container {key} is {data[key]!r}, not text")
        if data.get("mount_home") is not None and not isinstance(data["mount_home"], bool):
            raise ValueError(f"container mount_home is {data['mount_home']!r}, not true/false")
        return cls(**dict(data))
