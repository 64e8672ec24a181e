"""The whole site config: its top-level keys, each section handed to its builder, the ``Site``
built from them (the cross-object rules run afterwards in validate.py)."""

from __future__ import annotations

import yaml

from slurm_supernode.site.build_settings import SettingsBuilder
from slurm_supernode.site.build_supernodes import SupernodeBuilder
from slurm_supernode.site.model import (
    VENDORS,
    BenchSettings,
    ContainerSettings,
    DoctorSettings,
    ImexSettings,
    ObserveSettings,
    PathSettings,
    Site,
    SlurmSettings,
)

TOP_KEYS = (
    "name",
    "description",
    "vendor",
    "supernodes",
    "node_defaults",
    "node_overrides",
    "links",
    "device_ips",
    "host_ip",
    "slurm",
    "env_profiles",
    "bench",
    "paths",
    "doctor",
    "imex_channels",
    "restarts",
    "containers",
    "observe",
)


class SiteBuilder(SupernodeBuilder, SettingsBuilder):
    """One pass over the composed YAML: checks shape and types, builds the model."""

    # -- the whole file ----------------------------------------------------------------
    def build(self, root: yaml.Node | None) -> Site | None:
        if root is None:
            self.err((1, 1), "the file is empty", "see docs/site-config.md for the schema")
            return None
        top = self.mapping(root, "the site config", TOP_KEYS, ("name", "vendor", "supernodes"))
        if top is None:
            return None
        self.src.root = self.loc(root)
        name = self.name(top["name"][1], "name") if "name" in top else None
        vendor = self._vendor(top.get("vendor"))
        slurm = self._slurm(top["slurm"][1]) if "slurm" in top else SlurmSettings()
        defaults = (
            self._spec_layer(top["node_defaults"][1], "node_defaults", 0)
            if ("node_defaults" in top)
            else {}
        )
        links = self._links(top.get("links"), root)
        supernodes = self._supernodes(top, defaults, slurm, vendor)
        env = self._env_profiles(top["env_profiles"][1]) if "env_profiles" in top else {}
        bench = self._bench(top["bench"][1]) if "bench" in top else BenchSettings()
        paths = self._paths(top["paths"][1]) if "paths" in top else PathSettings()
        doctor = self._doctor(top["doctor"][1]) if "doctor" in top else DoctorSettings()
        imex, imex_settings = False, ImexSettings()
        if "imex_channels" in top:
            from slurm_supernode.site.imex import parse_imex

            imex, imex_settings = parse_imex(self, top["imex_channels"][1])
        restarts = self._restarts(top["restarts"][1]) if "restarts" in top else ()
        observe = self._observe(top["observe"][1]) if "observe" in top else ObserveSettings()
        containers = ContainerSettings()
        if "containers" in top:  # the container modules load only for a site that has some
            from slurm_supernode.site.containers import parse_containers

            containers = parse_containers(self, top["containers"][1])
        if supernodes is None:
            return None
        return Site(
            name=name or "?",
            vendor=vendor or "?",
            supernodes=tuple(supernodes),
            links=links,
            slurm=slurm,
            env_profiles=env,
            bench=bench,
            paths=paths,
            doctor=doctor,
            imex_channels=bool(imex),
            imex=imex_settings,
            restarts=restarts,
            containers=containers,
            observe=observe,
            source=self.file,
        )

    def _vendor(self, item: tuple[yaml.Node, yaml.Node] | None) -> str | None:
        if item is None:
            return None
        vendor = self.name(item[1], "vendor", "one of " + ", ".join(VENDORS))
        if vendor is not None and vendor not in VENDORS:
            self.err(item[1], f"unknown vendor {vendor!r}", "choose one of " + ", ".join(VENDORS))
            return None
        return vendor
