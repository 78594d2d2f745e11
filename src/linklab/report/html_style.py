"""The page's stylesheet and its one script (figures decoded? -> #image-check)."""

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#111;
 max-width:1200px;margin:0 auto;padding:1em 1.5em;background:#fff}
h1{font-size:1.6em;margin:.2em 0}h2{border-bottom:2px solid #333;padding-bottom:.15em;
 margin-top:1.6em}h3{margin:1.1em 0 .4em}h4{margin:.8em 0 .3em}
.meta,.summary{margin:.2em 0}.dim{color:#666}.legend{color:#333;font-size:.92em}
code,pre{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.88em}
pre{background:#f6f6f6;border:1px solid #ddd;padding:.6em;overflow:auto;max-height:40em}
table{border-collapse:collapse;margin:.5em 0 1.2em}
th,td{border:1px solid #bbb;padding:.25em .5em;vertical-align:top}
table.t2 td{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.t2 caption,table.cells caption{text-align:left;font-weight:600;padding:.3em 0}
table.t2 tr.paper td,table.t2 tr.paper th{color:#555;font-size:.9em;border-top:none}
table.t2 tr.diff td,table.t2 tr.diff th{font-size:.85em}
table.t2 tr.amplification td,table.t2 tr.amplification th{font-size:.9em;color:#333}
table.t2 th{background:#f2f2f2;text-align:left}
td.better,span.better{background:#d9f2de;color:#0b5d1e}
td.worse,span.worse{background:#fbdada;color:#8a1111}
td.close,span.close{color:#444}
th.failed,td.failed{background:#fff0f0}.failtag{color:#B00020;font-size:.85em}
th.error,td.error,span.error,tr.error td{background:#f3e8fb;color:#5b1a80;font-weight:600}
table.view td,table.view th{white-space:nowrap}table.view td.num{text-align:right;
 font-variant-numeric:tabular-nums}table.view th{background:#f2f2f2;text-align:left}
table.view td.miss{background:#fbdada;color:#8a1111;font-weight:600}
table.view td.met{color:#0b5d1e}p.note{margin:.2em 0;font-size:.92em}
article.error-cell{border-left:4px solid #5b1a80;padding-left:.8em;margin:1em 0}
table.plain th{text-align:left;background:#f7f7f7;font-weight:600}
dl.kv{display:grid;grid-template-columns:max-content auto;gap:.1em 1em;margin:.3em 0}
dl.kv dt{font-weight:600}dl.kv dd{margin:0}
.warn{background:#fff6e0;border:1px solid #e0b040;padding:.4em 1em}
#problems{margin-top:1em}
figure{margin:1.2em 0;page-break-inside:avoid;break-inside:avoid}
figure img{max-width:100%;height:auto;border:1px solid #ddd}
figcaption{font-size:.92em;color:#222;margin-top:.3em}
article.failed-cell{border-left:4px solid #B00020;padding-left:.8em;margin:1em 0}
.reason{font-weight:600;color:#8a1111}
.scroll{overflow-x:auto}table.cells td{text-align:right;white-space:nowrap}
table.cells td:nth-child(2),table.cells td:nth-child(3){text-align:left}
tr.failed td{background:#fff0f0}
td.regression{background:#fbdada;color:#8a1111;font-weight:600}
td.improvement{background:#d9f2de;color:#0b5d1e}
nav a{margin-right:1em}
.columns{display:grid;grid-template-columns:repeat(auto-fit,minmax(340px,1fr));gap:0 2em}
dl.measured{grid-template-columns:repeat(4,max-content minmax(5em,auto))}
@media print{body{max-width:none;padding:0;font-size:11px}nav,#image-check{display:none}
 *{-webkit-print-color-adjust:exact;print-color-adjust:exact}
 td.better::after{content:" better"}td.worse::after{content:" worse"}
 details{display:block}details>summary{list-style:none}
 table,figure,article{page-break-inside:avoid;break-inside:avoid}
 .scroll{overflow:visible}pre{max-height:none;white-space:pre-wrap}}
"""

# Marks the page once loaded: how many figures decoded (a headless browser reads this).
CHECK_SCRIPT = """
window.addEventListener('load', function () {
  var images = document.images, ok = 0;
  for (var i = 0; i < images.length; i++) {
    if (images[i].complete && images[i].naturalWidth > 0) { ok++; }
  }
  var mark = document.getElementById('image-check');
  mark.setAttribute('data-images-ok', String(ok));
  mark.setAttribute('data-images-total', String(images.length));
  mark.textContent = 'figures: ' + ok + ' of ' + images.length + ' rendered';
  if (ok < images.length) { mark.className = 'warn'; }
});
"""
