"""The status page's look: its stylesheet, inline in the page (light and dark, and phone width),
and its Content-Security-Policy, which allows that inline style and the badges beside the page,
and nothing else (no script, no external asset)."""

CSS = """
:root{color-scheme:light dark;--bg:#f5f6f8;--card:#fff;--text:#1c2128;--muted:#5c6570;--line:#dfe3e8;
--ok:#1f9d55;--minor:#c99a06;--major:#e0701f;--bad:#d1242f;--none:#c8ced6;--void:#eceff2;--maint:#2f6fde;
--ok-bg:#e6f6ec;--bad-bg:#fdeaea;--none-bg:#eef0f3;--warn-bg:#fff5d6}
@media (prefers-color-scheme:dark){:root{--bg:#0e1116;--card:#161b22;--text:#e6edf3;--muted:#949ea9;
--line:#2d333b;--ok:#3fb950;--minor:#d6a520;--major:#e8813a;--bad:#f25a55;--none:#3d444d;--void:#21262d;
--maint:#58a6ff;--ok-bg:#12261b;--bad-bg:#2d1517;--none-bg:#1c2128;--warn-bg:#2b2411}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--text);
font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:920px;margin:0 auto;padding:24px 16px 40px}
h1{font-size:22px;margin:0 0 14px;overflow-wrap:anywhere}
.overall{display:flex;align-items:center;gap:12px;padding:16px 18px;border-radius:10px;margin-bottom:8px;
border:1px solid var(--line)}
.overall.st-up{background:var(--ok-bg)}.overall.st-down{background:var(--bad-bg)}
.overall.st-partial{background:var(--warn-bg)}
.overall.st-none{background:var(--none-bg)}
.overall strong{font-size:18px}
.overall .counts{color:var(--muted);font-size:14px}
.meta{color:var(--muted);font-size:13px;margin:0 0 20px}
.warn{background:var(--warn-bg);border:1px solid var(--line);border-radius:8px;padding:8px 12px;font-size:14px}
.dot{flex:none;width:14px;height:14px;border-radius:50%;background:var(--none)}
.st-up .dot,.dot.st-up{background:var(--ok)}.st-down .dot,.dot.st-down{background:var(--bad)}
.st-partial .dot,.dot.st-partial{background:var(--minor)}
.dot.st-maintenance{background:var(--maint)}
.monitor{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:16px 18px;margin:0 0 14px}
.head{display:flex;align-items:center;gap:10px}
h2.group{font-size:18px;margin:26px 0 10px;overflow-wrap:anywhere}
.head h2{font-size:17px;margin:0;flex:1 1 auto;min-width:0;overflow-wrap:anywhere}
.state{font-size:13px;font-weight:600;padding:2px 10px;border-radius:999px;background:var(--none-bg);
color:var(--muted);white-space:nowrap}
.state.st-up{background:var(--ok-bg);color:var(--ok)}.state.st-down{background:var(--bad-bg);color:var(--bad)}
.state.st-partial{background:var(--warn-bg);color:var(--minor)}
.state.st-maintenance{color:var(--maint)}
.figures{display:grid;grid-template-columns:repeat(5,minmax(0,1fr));gap:8px;margin:14px 0 12px}
.figures div{min-width:0}
.figures dt{color:var(--muted);font-size:13px}
.figures dd{margin:0;font-size:17px;font-weight:600;font-variant-numeric:tabular-nums;white-space:nowrap}
.figures .lv-none{color:var(--muted);font-weight:400}
.latency-chart{display:block;width:100%;max-width:240px;height:36px;margin-top:4px;color:var(--muted)}
.latency-chart polyline{fill:none;stroke:currentColor;stroke-width:1.5}.latency-chart circle{fill:currentColor}
.bars{display:flex;gap:2px;height:34px;margin:0;padding:0;list-style:none}
.lv-ok{--c:var(--ok)}.lv-minor{--c:var(--minor)}.lv-major{--c:var(--major)}.lv-bad{--c:var(--bad)}
.lv-none{--c:var(--none)}.lv-void{--c:var(--void)}
.bars li{flex:1 1 0;min-width:0;border-radius:2px;background:var(--c)}
.bars li:hover{opacity:.7;outline:1px solid var(--text)}
/* a day with hours when monitor-tick was not running: the covered share in colour, the rest grey */
.bars .part,.legend .part{background:linear-gradient(to top,var(--c) var(--covered),var(--none) 0)}
.legend .lv-void{outline:1px solid var(--line)}
.figures .lv-minor,.figures .lv-major,.figures .lv-bad{color:var(--c)}
.axis{display:flex;justify-content:space-between;color:var(--muted);font-size:12px;margin-top:4px}
h3{font-size:13px;color:var(--muted);font-weight:600;margin:14px 0 6px;text-transform:uppercase;
letter-spacing:.04em}
.incidents{list-style:none;margin:0;padding:0;font-size:14px}
.incidents li{display:flex;flex-wrap:wrap;gap:4px 12px;padding:6px 0;border-top:1px solid var(--line)}
.incidents time{font-variant-numeric:tabular-nums;white-space:nowrap}
.incidents .duration{color:var(--muted);white-space:nowrap}
.incidents .cause{overflow-wrap:anywhere}
.incidents .open .duration{color:var(--bad);font-weight:600}
.quiet{color:var(--muted);font-size:14px;margin:12px 0 0}
footer{color:var(--muted);font-size:13px;border-top:1px solid var(--line);margin-top:24px;padding-top:14px}
.legend{display:flex;flex-wrap:wrap;gap:6px 14px;list-style:none;margin:0 0 10px;padding:0}
.legend span{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px;
vertical-align:-1px;background:var(--c)}
footer p{margin:6px 0}
@media (max-width:600px){main{padding:16px 10px 32px}.monitor{padding:14px 12px}
.figures{grid-template-columns:repeat(4,minmax(0,1fr))}.figures .latency{grid-column:1/-1}
.bars{gap:1px;height:30px}.bars li{border-radius:1px}}
"""

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'none'"
