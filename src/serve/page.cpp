#include "serve/page.h"

namespace oc::serve {

// A text box (search by text, ?q= in the URL runs it on load), an image upload ("more like
// this"), and the results as a grid of images with captions and scores.
const std::string& search_page() {
  static const std::string page = R"html(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>openclip search</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:system-ui,sans-serif;margin:2rem;background:#fafafa;color:#222}
form{display:flex;gap:.5rem;flex-wrap:wrap;align-items:center;margin-bottom:1rem}
input[type=text]{flex:1;min-width:16rem;padding:.5rem;font-size:1rem}
button{padding:.5rem 1rem;font-size:1rem}
#status{color:#666;margin:.5rem 0}
#status.error{color:#b00}
#grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(160px,1fr));gap:1rem}
figure{margin:0;background:#fff;border:1px solid #ddd;border-radius:6px;padding:.5rem}
figure img{width:100%;aspect-ratio:1;object-fit:contain;image-rendering:pixelated;background:#eee}
figcaption{font-size:.85rem;word-break:break-word}
.score{font-variant-numeric:tabular-nums;color:#555}
</style></head><body>
<h1>openclip search</h1>
<form id="textform"><input id="q" type="text" name="q" placeholder="a photo of a sneaker" autofocus>
<button type="submit">Search</button>
<label>or more like this: <input id="file" type="file" accept="image/*"></label></form>
<div id="status"></div><div id="grid"></div>
<script>
const grid = document.getElementById('grid'), statusEl = document.getElementById('status');
function show(data) {
  grid.textContent = '';
  statusEl.className = '';
  statusEl.textContent = data.results.length + ' results';
  for (const r of data.results) {
    const fig = document.createElement('figure'); fig.className = 'hit';
    const img = document.createElement('img'); img.src = r.url; img.alt = r.caption || r.key; img.loading = 'lazy';
    const cap = document.createElement('figcaption');
    const score = document.createElement('span'); score.className = 'score'; score.textContent = r.score.toFixed(4);
    cap.append(score, ' ', r.caption || r.key.split('/').pop());
    fig.append(img, cap); grid.append(fig);
  }
}
async function run(promise) {
  statusEl.className = ''; statusEl.textContent = 'searching...';
  try {
    const res = await promise, data = await res.json();
    if (!res.ok) throw new Error(data.error ? data.error.message : res.statusText);
    show(data);
  } catch (e) { grid.textContent = ''; statusEl.className = 'error'; statusEl.textContent = 'error: ' + e.message; }
}
function searchText(q) {
  history.replaceState(null, '', '?q=' + encodeURIComponent(q));
  run(fetch('/v1/search?k=24&q=' + encodeURIComponent(q)));
}
document.getElementById('textform').addEventListener('submit', e => {
  e.preventDefault();
  const q = document.getElementById('q').value.trim();
  if (q) searchText(q);
});
document.getElementById('file').addEventListener('change', e => {
  const f = e.target.files[0]; if (!f) return;
  const body = new FormData(); body.append('image', f);
  run(fetch('/v1/search?k=24', {method: 'POST', body}));
});
const q0 = new URLSearchParams(location.search).get('q');
if (q0) { document.getElementById('q').value = q0; searchText(q0); }
</script></body></html>
)html";
  return page;
}

}  // namespace oc::serve
