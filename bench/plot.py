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
from matplotlib.patches import Patch

COLORS = {"a2a-hub": "#2b8a3e", "a2a-sdk": "#c92a2a", "a2a-js": "#e8590c", "ceiling": "#868e96"}
LABELS = {
    "a2a-hub": "a2a-hub",
    "a2a-sdk": "official a2a-sdk (Python)",
    "a2a-js": "official @a2a-js/sdk (Express)",
    "ceiling": "bare uvicorn+Starlette ceiling",
}
ALL = list(COLORS)


def main() -> None:
    src, dst = Path(sys.argv[1]), Path(sys.argv[2])
    data: dict[str, Any] = json.loads(src.read_text())
    scenarios = [e for e in data.get("scenarios", []) if e["servers"]]
    by_key = {e["key"]: e for e in data.get("scenarios", [])}
    meta, settings = data.get("meta", {}), data.get("settings", {})
    # The servers this file has figures for (a results.json from before a2a-js has none of it).
    order = [k for k in ALL if any(s.split("/")[0] == k for e in scenarios for s in e["servers"])]
    fig, (ax_rps, ax_p99) = plt.subplots(2, 1, figsize=(13, 8.5), sharex=True)
    width = 0.8 / len(order)

    for i, e in enumerate(scenarios):
        bars: list[tuple[str, dict[str, Any], bool]] = []
        for kind in order:
            own = next((v for k, v in e["servers"].items() if k.split("/")[0] == kind), None)
            if own is not None:
                bars.append((kind, own, False))
            elif e["baseline"] != e["key"]:
                # Store rows: the SDKs' and the ceiling's in-memory figures, hatched, for scale.
                ref = by_key.get(e["baseline"], {}).get("servers", {}).get(kind)
                if ref is not None:
                    bars.append((kind, ref, True))
        for kind, figs, reference in bars:
            x = i - 0.4 + width * (order.index(kind) + 0.5)
            style: dict[str, Any] = {"color": COLORS[kind]}
            if reference:
                style.update(alpha=0.35, hatch="//")
            rps = ax_rps.bar(x, figs["rps"], width, **style)
            ax_rps.bar_label(rps, [f"{figs['rps']:,.0f}"], fontsize=7, rotation=90, padding=2)
            p99 = ax_p99.bar(x, figs["p99_ms"], width, **style)
            ax_p99.bar_label(p99, [f"{figs['p99_ms']:.0f}"], fontsize=7, padding=1)

    for ax, ylabel in ((ax_rps, "requests/s (median, log)"), (ax_p99, "p99 latency, ms (log)")):
        ax.set_yscale("log")
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", which="both", alpha=0.3)
        ax.margins(y=0.15)
    ax_p99.set_xticks(range(len(scenarios)), [e.get("short", e["title"]) for e in scenarios])
    ax_p99.tick_params(axis="x", labelsize=8)
    handles = [Patch(color=COLORS[k]) for k in order] + [
        Patch(facecolor="white", edgecolor="black", hatch="//")
    ]
    fig.legend(
        handles,
        [*(LABELS[k] for k in order), "in-memory figure, for reference"],
        loc="upper center",
        bbox_to_anchor=(0.5, 0.915),
        ncol=len(order) + 1,
        fontsize=8,
        frameon=False,
    )
    hub, sdk = meta.get("hub_env", {}), meta.get("sdk_env", {})
    js = meta.get("js_env", {}) if "a2a-js" in order else {}
    title = (
        f"a2a-hub {hub.get('a2a-hub')} vs a2a-sdk {sdk.get('a2a-sdk')} vs "
        + (f"@a2a-js/sdk {js.get('@a2a-js/sdk')} vs " if js else "")
        + f"ceiling; {meta.get('cores')} cores, Python {hub.get('python')}"
        + (f", Node.js {js.get('node')}" if js else "")
        + "\none uvicorn worker "
        + ("(one Node.js process) " if js else "")
        + f"per server pinned to one core, wrk -c{settings.get('connections')} on the other; "
        f"median of {settings.get('rounds')} x {settings.get('duration_s')} s"
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
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main()
