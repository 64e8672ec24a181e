"""A node's figures pushed to a Prometheus Pushgateway, where the site names one
(``observe.pushgateway``): the same series as the node's textfile (``prom_textfile``), for
sites whose nodes run no node_exporter, or whose Prometheus cannot reach the nodes.

Each node of each job is its own group, ``/metrics/job/<job id>/node/<node>``, so the series of
different jobs and nodes never replace each other; every push is a PUT (the group's series are
replaced whole: a series the node no longer has is gone, as from a rewritten textfile) and the
group is deleted at the job's end. Label values go base64url-encoded in the path (the
Pushgateway's ``@base64`` form), so any node name is safe. The series carry the same ``job``
and ``node`` labels as the group key.

Standard library only (``urllib``): the agent needs no client library. A failure is returned
in words, never raised: the job goes on without the pushed series.
"""

from __future__ import annotations

import base64
import urllib.error
import urllib.request

TIMEOUT_S = 5.0  # one push or delete: a gateway that hangs must not hold the sampler's thread
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _segment(name: str, value: str) -> str:
    encoded = base64.urlsafe_b64encode(value.encode()).decode()
    return f"{name}@base64/{encoded or '='}"


def group_url(gateway: str, job_id: int | None, node: str) -> str:
    """The URL of one job's node's group on the gateway."""
    job = "nojob" if job_id is None else str(job_id)
    return f"{gateway.rstrip('/')}/metrics/{_segment('job', job)}/{_segment('node', node)}"


def _send(method: str, url: str, body: bytes | None) -> str | None:
    request = urllib.request.Request(url, data=body, method=method)
    if body is not None:
        request.add_header("Content-Type", CONTENT_TYPE)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            response.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace").strip().splitlines()
        return f"HTTP {exc.code} {exc.reason}" + (f": {detail[0][:200]}" if detail else "")
    except urllib.error.URLError as exc:
        return str(exc.reason)
    except OSError as exc:  # a timeout, a reset connection
        return str(exc) or type(exc).__name__
    return None


def push_node(gateway: str, job_id: int | None, node: str, text: str) -> str | None:
    """Replace the node's group with ``text`` (exposition format); None when pushed, else why
    not."""
    why = _send("PUT", group_url(gateway, job_id, node), text.encode())
    return None if why is None else f"not pushed to the Pushgateway {gateway}: {why}"


def delete_node(gateway: str, job_id: int | None, node: str) -> str | None:
    """Delete the node's group (the job's end); None when deleted, else why not."""
    url = group_url(gateway, job_id, node)
    why = _send("DELETE", url, None)
    return (
        None if why is None else f"not deleted from the Pushgateway ({why}): curl -X DELETE {url}"
    )
