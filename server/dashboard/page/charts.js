'use strict';
// f2obo dashboard: the drawing (inline SVG line charts and bar rows) and the
// number formatting the page shares.  Inlined before app.js (embed_page.cmake);
// app.js's scripts see these top-level names.

const MAX_DRAWN = 1000;    // vertices drawn per line (evenly thinned beyond)

const esc = s => String(s).replace(/[&<>"']/g, c => '&#' + c.charCodeAt(0) + ';');
const finite = v => typeof v === 'number' && isFinite(v);

// `digits` significant digits; exponent form for very small or large values.
function fmt(v, digits = 4) {
  if (!finite(v)) return '\u2013';
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(digits - 2).replace('e+', 'e');
  return String(Number(v.toPrecision(digits)));
}

// The points of a line without its breaks.
const real = pts => pts.filter(p => p !== null);

// ------------------------------------------------------------------ charts
// Automatic scale: log when every value is positive and they span more than
// three decades (e.g. one algorithm's regret dwarfing another's).
function autoLog(series) {
  let lo = Infinity, hi = 0;
  for (const s of series) {
    for (const [, v] of real(s.points)) {
      if (v <= 0) return false;
      lo = Math.min(lo, v); hi = Math.max(hi, v);
    }
  }
  return hi / lo > 1e3;
}

// series: [{name, color, points: [[t, v] or null (a break), ...],
// band?: [[t, lo, hi], ...]}] -> an SVG string.
function chartSVG(series, key, log) {
  const w = 320, h = 160, pad = {l: 50, r: 8, t: 8, b: 18};
  const total = series.reduce((n, s) => n + real(s.points).length, 0);
  // On a log scale only positive values can be drawn (a value left out
  // breaks the line too).
  const drawn = series.map(s => log ? s.points.map(p => p && p[1] > 0 ? p : null) : s.points);
  const bands = series.map(s => (s.band || []).map(([t, lo, hi]) =>
    [t, log ? Math.max(lo, 1e-300) : lo, hi]));
  const tr = v => log ? Math.log10(v) : v;
  let t0 = Infinity, t1 = -Infinity, v0 = Infinity, v1 = -Infinity;
  for (const pts of drawn) {
    for (const [t, v] of real(pts)) {
      t0 = Math.min(t0, t); t1 = Math.max(t1, t);
      v0 = Math.min(v0, tr(v)); v1 = Math.max(v1, tr(v));
    }
  }
  for (const b of bands) {
    for (const [, lo, hi] of b) { v0 = Math.min(v0, tr(lo)); v1 = Math.max(v1, tr(hi)); }
  }
  let out = `<svg viewBox="0 0 ${w} ${h}" data-metric="${esc(key)}" data-points="${total}" ` +
            `data-series="${series.length}" data-scale="${log ? 'log' : 'linear'}">`;
  if (t0 === Infinity) {
    return out + `<text x="${w / 2}" y="${h / 2}" text-anchor="middle">no data yet</text></svg>`;
  }
  if (t1 === t0) { t0 -= 1; t1 += 1; }
  if (v1 === v0) { const d = Math.abs(v0) * 0.1 || 1; v0 -= d; v1 += d; }
  const X = t => pad.l + (t - t0) / (t1 - t0) * (w - pad.l - pad.r);
  const Y = v => h - pad.b - (tr(v) - v0) / (v1 - v0) * (h - pad.t - pad.b);
  for (let i = 0; i <= 3; i++) {
    const u = v0 + (v1 - v0) * i / 3;
    const y = (h - pad.b - i / 3 * (h - pad.t - pad.b)).toFixed(1);
    out += `<line class="axis" x1="${pad.l}" x2="${w - pad.r}" y1="${y}" y2="${y}"/>` +
           `<text x="${pad.l - 4}" y="${+y + 3}" text-anchor="end">` +
           `${fmt(log ? Math.pow(10, u) : u, 3)}</text>`;
  }
  out += `<text x="${pad.l}" y="${h - 4}">t=${t0}</text>` +
         `<text x="${w - pad.r}" y="${h - 4}" text-anchor="end">t=${t1}</text>`;
  series.forEach((s, k) => {
    const b = bands[k];
    if (b.length > 1) {  // the estimate's +-1 SE, shaded under its line
      const every = Math.max(1, Math.ceil(b.length / MAX_DRAWN));
      const kept = b.filter((p, i) => i % every === 0 || i === b.length - 1);
      const upper = kept.map(([t, , hi]) => X(t).toFixed(1) + ',' + Y(hi).toFixed(1));
      const lower = kept.reverse().map(([t, lo]) => X(t).toFixed(1) + ',' + Y(lo).toFixed(1));
      out += `<polygon class="band" fill="${s.color}" fill-opacity="0.15" stroke="none" ` +
             `points="${upper.concat(lower).join(' ')}" data-session="${esc(s.name)}"/>`;
    }
  });
  series.forEach((s, k) => {
    const pts = drawn[k];
    const every = Math.max(1, Math.ceil(pts.length / MAX_DRAWN));
    // Thinning keeps every break and the vertices on either side of it.
    const kept = pts.filter((p, i) => p === null || i % every === 0 || i === pts.length - 1 ||
                                      pts[i - 1] === null || pts[i + 1] === null);
    let d = '', run = 0, gaps = 0;
    const dots = [];
    kept.forEach((p, i) => {
      if (p === null) {
        if (run === 1) dots.push(kept[i - 1]);
        if (run > 0) gaps++;
        run = 0;
        return;
      }
      d += (run === 0 ? 'M' : 'L') + X(p[0]).toFixed(1) + ',' + Y(p[1]).toFixed(1) + ' ';
      run++;
    });
    if (run === 1) dots.push(kept[kept.length - 1]);
    const pr = real(s.points);
    const last = pr.length ? pr[pr.length - 1] : null;
    out += `<path class="line" stroke="${s.color}" d="${d.trim()}" ` +
           `data-session="${esc(s.name)}" data-points="${pr.length}" data-gaps="${gaps}" ` +
           `data-last-t="${last ? last[0] : ''}"><title>${esc(s.name)}</title></path>`;
    // A point between two breaks (or alone) is drawn as a dot.
    for (const [t, v] of dots) {
      out += `<circle cx="${X(t).toFixed(1)}" cy="${Y(v).toFixed(1)}" r="2" fill="${s.color}"/>`;
    }
  });
  return out + '</svg>';
}

function barsSVG(x, color, h) {
  const w = 600, m = Math.max(...x.map(v => Math.abs(v || 0))) || 1;
  const bw = Math.min(w / Math.max(x.length, 1), 40), mid = h / 2;
  return `<svg viewBox="0 0 ${w} ${h}" preserveAspectRatio="none" ` +
    `style="width:100%;height:${h}px" data-entries="${x.length}">` +
    `<line class="axis" x1="0" x2="${w}" y1="${mid}" y2="${mid}"/>` +
    x.map((v, i) => {
      const len = Math.abs(v || 0) / m * (mid - 1);
      return `<rect x="${(i * bw + 0.5).toFixed(1)}" width="${Math.max(bw - 1, 0.5).toFixed(1)}" ` +
             `y="${(v >= 0 ? mid - len : mid).toFixed(1)}" height="${len.toFixed(2)}" ` +
             `fill="${color}"/>`;
    }).join('') + '</svg>';
}
