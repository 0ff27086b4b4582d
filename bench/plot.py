"""Draw bench/results.png from bench/results.json (run with bench/.venv-sdk's python,
which has matplotlib).

    python bench/plot.py bench/results.json bench/results.png
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

COLORS = {"a2a-hub": "#2b8a3e", "a2a-sdk": "#c92a2a", "ceiling": "#868e96"}


def color(server: str) -> str:
    return COLORS.get(server.split("/")[0], "#2b8a3e")


def main() -> None:
    src, dst = Path(sys.argv[1]), Path(sys.argv[2])
    data: dict[str, Any] = json.loads(src.read_text())
    scenarios = [e for e in data.get("scenarios", []) if e["servers"]]
    meta, settings = data.get("meta", {}), data.get("settings", {})
    fig, (ax_rps, ax_p99) = plt.subplots(2, 1, figsize=(13, 9.5), sharex=True)

    labels: list[str] = []
    for i, e in enumerate(scenarios):
        labels.append(e["title"].replace(" (", "\n("))
        servers = list(e["servers"].items())
        width = 0.8 / max(len(servers), 1)
        for j, (server, fig_) in enumerate(servers):
            x = i - 0.4 + width * (j + 0.5)
            rps_bar = ax_rps.bar(x, fig_["rps"], width, color=color(server))
            ax_rps.bar_label(rps_bar, [f"{fig_['rps']:,.0f}"], fontsize=7, rotation=90, padding=2)
            ax_p99.bar(x, fig_["p99_ms"], width, color=color(server))
            ax_rps.text(
                x,
                1,
                server.split("/")[-1],
                ha="center",
                va="bottom",
                fontsize=6.5,
                rotation=90,
                color="white",
            )

    for ax, ylabel in ((ax_rps, "requests/s (median, log)"), (ax_p99, "p99 latency ms (log)")):
        ax.set_yscale("log")
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", which="both", alpha=0.3)
    ax_p99.set_xticks(range(len(labels)), labels, fontsize=8)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in COLORS.values()]
    ax_rps.legend(
        handles,
        ["a2a-hub", "official a2a-sdk", "bare uvicorn+Starlette ceiling"],
        loc="upper right",
        fontsize=8,
    )
    hub, sdk = meta.get("hub_env", {}), meta.get("sdk_env", {})
    title = (
        f"a2a-hub {hub.get('a2a-hub')} vs a2a-sdk {sdk.get('a2a-sdk')} vs ceiling; "
        f"{meta.get('cores')} cores, Python {hub.get('python')}; one uvicorn worker per server "
        f"pinned to one core, wrk -c{settings.get('connections')} on the other; median of "
        f"{settings.get('rounds')} x {settings.get('duration_s')} s"
    )
    scale = data.get("scale")
    if scale:
        parts = []
        idle = scale.get("idle")
        if idle:
            parts.append(
                f"{idle['subscriptions']:,} idle SSE subscriptions: "
                f"{idle['kib_per_subscription']:.1f} KiB each"
            )
        fan = scale.get("fanout")
        if fan:
            parts.append(
                f"one event to {fan['subscribers']:,} subscribers: "
                f"p50 {fan['p50_ms']:.1f} ms, p99 {fan['p99_ms']:.1f} ms"
            )
        if parts:
            title += "\n" + "; ".join(parts)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main()
