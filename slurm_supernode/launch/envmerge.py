"""Environment for the collective library: site profiles < template < --env.

The template sits between the two because the rendered script exports the site's variables
first, then the template's own block, then --env: the shell's last assignment wins.
"""

from __future__ import annotations

from collections.abc import Iterable

from slurm_supernode.errors import InputError
from slurm_supernode.site.model import Site


def merge_env(
    site: Site, user_env: Iterable[tuple[str, str]], profiles: Iterable[str] = ()
) -> tuple[dict[str, str], dict[str, str]]:
    """(site variables, user variables). Site: the ``default`` profile, then the profile named
    after the vendor, then each profile named with --profile, later ones winning."""
    names = ["default", site.vendor]
    for name in profiles:
        if name not in site.env_profiles:
            raise InputError(
                f"site {site.name} has no env profile {name!r}",
                where="--profile",
                hint="valid: " + (", ".join(sorted(site.env_profiles)) or "(none)"),
            )
        names.append(name)
    merged: dict[str, str] = {}
    for name in names:
        profile = site.env_profiles.get(name)
        if profile is not None:
            merged.update(profile.as_dict())
    return merged, dict(user_env)
