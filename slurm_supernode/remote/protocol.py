"""What the laptop's snrun needs of the login node's: the version that has ``snrun remote``
(the code store and the JSON verbs). A login node with an older snrun is told so, by number."""

from __future__ import annotations

NEEDED_VERSION = "0.2.0"
HIDDEN_VERB = "remote"
