'use strict';
// f2obo live dashboard.  Polls the JSON API of the server that serves this
// page (server/dashboard/api.h) about once a second, fetching only the steps
// after the last one it holds (?after=), and draws inline SVG charts.
//
// View state lives in the URL fragment, so a view can be bookmarked:
//   #session=<id>                 one session
//   #mode=compare&compare=<a>,<b> the ticked sessions overlaid
//   #group=<g>                    every member of group g overlaid
//
// For tests and scripts each chart's <svg> carries data-metric,
// data-points (points over all its lines) and data-series; each line
// (<path class="line">) data-session, data-points, data-last-t and
// data-gaps.  <body> counts completed polls in data-polls.
//
// Gaps are gaps: a step whose exact metrics were due but
// not computed (the metrics worker was behind and the step was not in its
// sample: exact_skipped) breaks the line of every exact metric there,
// rather than a straight line across it.  Beside BLReg the page shows its
// coverage (steps evaluated of those due) and the Horvitz-Thompson
// estimate over every due step with its standard error (the estimate
// chart's band), so that skipped steps cannot pass for convergence.

const POLL_MS = 1000;
const MAX_STEPS = 5000;    // kept per session in the browser
const MAX_DRAWN = 1000;    // vertices drawn per line (evenly thinned beyond)
const DECISION_BARS = 64;  // entries of x_t drawn
const DECISION_LISTED = 10;
const COLORS = ['#2563eb', '#dc2626', '#059669', '#d97706', '#7c3aed', '#0891b2', '#db2777',
                '#65a30d', '#4b5563', '#ea580c', '#0d9488', '#9333ea', '#ca8a04', '#be123c',
                '#1d4ed8', '#15803d'];

// key, chart title, the value of one step (undefined or null: not available),
// optional (the chart is left out when no shown session has a point: the
// metrics of one problem class are absent from another's steps), exact (an
// exact metric: its line breaks at steps whose exact metrics were skipped).
const EXACT = true;
const METRICS = [
  ['blreg', 'BLReg(t) over the evaluated steps', s => s.blreg, true, EXACT],
  // Every due step's message carries the running estimate: no gaps.
  ['estimate', 'estimated regret sum over every due step (Horvitz-Thompson, \u00b11 SE; ' +
   'simple bilevel: inner gaps)', s => s.estimate, true],
  ['regret_term', 'regret term \u2016G_X(x_t, \u2207F_t(x_t), \u03b3)\u2016\u00b2',
   s => s.regret_term, true, EXACT],
  ['hypergradient_error', 'hypergradient error \u2016h_t \u2212 \u2207F_t(x_t)\u2016',
   s => s.hypergradient_error, true, EXACT],
  ['variation_sum', 'V_T estimate \u03a3 |F_t(x_t) \u2212 F_{t\u22121}(x_t)|', s => s.variation_sum,
   true, EXACT],
  ['drift_sum', 'H_2,T estimate \u03a3 \u2016y*_t(x_t) \u2212 y*_{t\u22121}(x_t)\u2016\u00b2',
   s => s.drift_sum, true, EXACT],
  ['lambda', '\u03bb_t', s => s.lambda, true],
  ['inner_iterations', 'inner iterations per step (z + y)',
   s => s.z_iterations === undefined ? undefined : s.z_iterations + s.y_iterations, true],
  ['value', 'F_t(x_t)', s => s.value, true, EXACT],
  // Simple bilevel sessions: the optimality gaps of the decision.
  ['inner_gap', 'simple bilevel: inner gap g(x) \u2212 g*', s => s.inner_gap, true, EXACT],
  ['fw_gap', 'simple bilevel: Frank-Wolfe gap (bounds the inner gap)', s => s.fw_gap, true, EXACT],
  ['outer_gap', 'simple bilevel: outer gap f(x) \u2212 f*', s => s.outer_gap, true, EXACT],
  ['simple_f', 'simple bilevel: f(x) on recent rows', s => s.f, true, EXACT],
  // Multi-task sessions: F over the tasks seen (regret, hypergradient error
  // and F itself share the charts above), tasks touched, what the exact
  // metrics cost, and the per-task regret terms of tasks 0-3 (the only
  // tasks with per-task figures).
  ['gradient_norm', 'multi-task: \u2016\u2207F(x_t)\u2016 over the tasks seen',
   s => s.gradient_norm, true, EXACT],
  ['tasks_touched', 'multi-task: tasks touched (holding state)', s => s.tasks_touched, true],
  ['exact_seconds', 'multi-task: cost of the exact metrics (s)', s => s.exact_seconds, true, EXACT],
  ...[0, 1, 2, 3].map(i => [`task${i}_regret_term`,
                            `multi-task: task ${i} regret term \u2016G_X(x_t, \u2207F_${i})\u2016\u00b2`,
                            s => ((s.task_metrics || []).find(m => m.task === i) || {}).regret_term,
                            true, EXACT]),
  ['latency_ms', 'step latency (ms, the round)', s => s.round_seconds * 1000],
  ['upper_loss_before', 'prequential upper loss f_t(x_t, y_t)', s => s.upper_loss_before],
  ['accuracy_before', 'prequential accuracy', s => s.accuracy_before, true],
];

const state = {
  mode: 'session',  // or 'compare'
  selected: null,   // the session shown in 'session' mode
  ticked: [],       // sessions compared when no group is picked
  group: '',        // a group whose members are compared
  sessions: [], groups: [],
  data: {},         // id -> {steps: [...], lastT}
  decisions: {},    // id -> the latest /api/decision reply
  scale: {},        // metric key -> 'log' or 'linear' picked by a click (else automatic)
  polls: 0,
};

const $ = id => document.getElementById(id);
const esc = s => String(s).replace(/[&<>"']/g, c => '&#' + c.charCodeAt(0) + ';');
const finite = v => typeof v === 'number' && isFinite(v);

// `digits` significant digits; exponent form for very small or large values.
function fmt(v, digits = 4) {
  if (!finite(v)) return '\u2013';
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(digits - 2).replace('e+', 'e');
  return String(Number(v.toPrecision(digits)));
}

// The sessions drawn now, in a stable order.
function shown() {
  if (state.mode === 'session') return state.selected ? [state.selected] : [];
  if (state.group) {
    const g = state.groups.find(g => g.id === state.group);
    return g ? g.members : [];
  }
  return state.ticked;
}

// ------------------------------------------------------------ URL fragment
function readHash() {
  const h = new URLSearchParams(location.hash.slice(1));
  state.selected = h.get('session') || state.selected;
  state.ticked = (h.get('compare') || '').split(',').filter(Boolean);
  state.group = h.get('group') || '';
  state.mode = h.get('mode') === 'compare' || state.group ? 'compare' : 'session';
}

function writeHash() {
  const h = new URLSearchParams();
  if (state.mode === 'compare') {
    if (state.group) h.set('group', state.group);
    else h.set('mode', 'compare');
  }
  if (state.selected) h.set('session', state.selected);
  if (state.ticked.length) h.set('compare', state.ticked.join(','));
  history.replaceState(null, '', '#' + h.toString());
}

// -------------------------------------------------------------------- data
async function getJSON(path) {
  const r = await fetch(path, {cache: 'no-store'});
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

// Appends the steps published since the last poll; true if any arrived.
async function fetchSteps(id) {
  const info = state.sessions.find(s => s.id === id);
  let d = state.data[id];
  // A session deleted and created again under the same id starts over.
  if (!d || (info && info.next_t - 1 < d.lastT)) d = state.data[id] = {steps: [], lastT: 0};
  const r = await getJSON('/api/metrics?session=' + encodeURIComponent(id) + '&after=' + d.lastT);
  if (!r.steps.length) return false;
  d.steps.push(...r.steps);
  if (d.steps.length > MAX_STEPS) d.steps.splice(0, d.steps.length - MAX_STEPS);
  d.lastT = d.steps[d.steps.length - 1].t;
  return true;
}

async function poll() {
  try {
    const list = await getJSON('/api/sessions');
    state.sessions = list.sessions;
    state.groups = list.groups;
    const ids = new Set(state.sessions.map(s => s.id));
    if (!state.selected && state.sessions.length) state.selected = state.sessions[0].id;
    for (const id of shown()) {
      if (!ids.has(id)) continue;
      try {
        await fetchSteps(id);
        state.decisions[id] = await getJSON('/api/decision?session=' + encodeURIComponent(id) +
                                            '&max=' + DECISION_BARS);
      } catch (e) {
        // Deleted between the two requests: the next poll's list says so.
      }
    }
    state.polls++;
    document.body.dataset.polls = state.polls;
    render();
    $('status').textContent = 'live \u00b7 ' + state.sessions.length + ' session(s) \u00b7 ' +
                              new Date().toLocaleTimeString();
    $('status').className = '';
  } catch (e) {
    $('status').textContent = 'cannot reach the server: ' + e.message;
    $('status').className = 'bad';
  }
  setTimeout(poll, POLL_MS);
}

// [[t, v], ...] with null where the line breaks: an exact metric at a step
// whose exact metrics were skipped.  `band` gets [t, lo, hi] for the
// estimate (its standard error).
function pointsOf(id, key, band) {
  const [, , get, , exact] = METRICS.find(m => m[0] === key);
  const pts = [];
  for (const s of (state.data[id] || {steps: []}).steps) {
    const v = get(s);
    if (finite(v)) {
      pts.push([s.t, v]);
      if (band && finite(s.estimate_se)) band.push([s.t, v - s.estimate_se, v + s.estimate_se]);
    } else if (exact && s.exact_skipped !== undefined && pts.length &&
               pts[pts.length - 1] !== null) {
      pts.push(null);
    }
  }
  if (pts.length && pts[pts.length - 1] === null) pts.pop();
  return pts;
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
  let out = `<svg viewBox="0 0 ${w} ${h}" data-metric="${key}" data-points="${total}" ` +
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

// ------------------------------------------------------------------ render
// The list's lambda and BLReg cells.  A simple bilevel session has neither
// (a 0 would read as a value): a dash, then its own headline, the mean
// inner gap g(x) - g* over its converged exact evaluations.
function headline(s) {
  const due = (s.evaluated_steps || 0) + (s.skipped_steps || 0);
  const coverage = due > (s.evaluated_steps || 0) ?
      ` <span class="muted coverage">${s.evaluated_steps}/${due}</span>` : '';
  if (s.problem_class !== 'simple_bilevel') {
    return `<td class="num lambda">${fmt(s.lambda)}</td><td class="num headline" ` +
           `title="BLReg over ${s.evaluated_steps} evaluated of ${due} due steps; estimate ` +
           `over all: ${fmt(s.estimate)} \u00b1 ${fmt(s.estimate_standard_error)}">` +
           `${fmt(s.blreg)}` +
           `${coverage}</td>`;
  }
  const n = (s.evaluated_steps || 0) - (s.unconverged_steps || 0);
  const gap = n > 0 ? 'gap ' + fmt(s.inner_gap_sum / n) : '\u2014';
  return '<td class="num lambda" title="no \u03bb: a simple bilevel session">\u2014</td>' +
         `<td class="num headline" title="mean inner gap g(x) \u2212 g* over ${n} ` +
         `evaluated steps">${gap}</td>`;
}

function renderList() {
  $('no-sessions').hidden = state.sessions.length > 0;
  $('sessions').innerHTML = state.sessions.map(s =>
    `<tr data-id="${esc(s.id)}" class="${state.mode === 'session' && s.id === state.selected ?
                                          'sel' : ''}">` +
    `<td><input type="checkbox" ${state.ticked.includes(s.id) ? 'checked' : ''}></td>` +
    `<td title="${esc(s.id)}">${esc(s.id)}</td>` +
    `<td title="${esc(s.algorithm)} on ${esc(s.family)}">${esc(s.algorithm)}</td>` +
    `<td class="num">${s.next_t - 1}</td>` + headline(s) + '</tr>').join('');
  $('group-picker').hidden = state.groups.length === 0;
  const options = ['<option value="">\u2014</option>'].concat(state.groups.map(g =>
    `<option value="${esc(g.id)}">${esc(g.id)} (${g.members.length})</option>`)).join('');
  if ($('group').innerHTML !== options) $('group').innerHTML = options;
  $('group').value = state.mode === 'compare' ? state.group : '';
}

function renderHeading(ids) {
  const info = id => state.sessions.find(s => s.id === id);
  if (state.mode === 'session') {
    const s = info(state.selected);
    $('title').textContent = state.selected ? 'Session ' + state.selected : 'Pick a session';
    $('subtitle').textContent = s ? `${s.algorithm} on ${s.family} \u00b7 x: ${s.x_dim}, ` +
        `y: ${s.y_dim} \u00b7 t = ${s.next_t - 1} \u00b7 exact metrics on ` +
        `${s.evaluated_steps} of ${s.evaluated_steps + (s.skipped_steps || 0)} due step(s)` +
        (s.skipped_steps ? ` \u00b7 estimate ${fmt(s.estimate)} \u00b1 ` +
                           fmt(s.estimate_standard_error) : '') : '';
    $('legend').innerHTML = '';
    return;
  }
  $('title').textContent = state.group ? 'Group ' + state.group : 'Compare';
  $('subtitle').textContent = ids.length ? ids.length + ' session(s) on one chart each' :
      'tick sessions in the list, or pick a group';
  $('legend').innerHTML = ids.map((id, i) => {
    const s = info(id);
    return `<span><i style="background:${COLORS[i % COLORS.length]}"></i>${esc(id)}` +
           (s ? ` <span class="muted">${esc(s.algorithm)}, t = ${s.next_t - 1}</span>` : '') +
           '</span>';
  }).join('');
}

function renderDecisions(ids) {
  const rows = [];
  ids.forEach((id, i) => {
    const d = state.decisions[id];
    if (!d) return;
    const color = COLORS[i % COLORS.length];
    const listed = d.x.slice(0, DECISION_LISTED).map(v => fmt(v)).join('  ') +
                   (d.x_dim > DECISION_LISTED ? '  \u2026' : '');
    rows.push(`<div class="decision-row" data-session="${esc(id)}" data-t="${d.t}">` +
              `<div><span class="swatch" style="background:${color}"></span>${esc(id)}` +
              `<div class="muted">t = ${d.t}, ${d.x.length} of ${d.x_dim}</div></div>` +
              `<div>${barsSVG(d.x, color, ids.length > 1 ? 26 : 40)}` +
              `<div class="decision-values">${listed}</div></div></div>`);
  });
  $('decisions').innerHTML = rows.join('') || '<span class="muted">no decision yet</span>';
  $('decision-note').textContent = ids.length ? `first ${DECISION_BARS} entries drawn` : '';
}

// Of a session's newest step that says: exact metrics on `evaluated` of
// the `due` steps, and the estimate with its standard error.
function coverageOf(id) {
  const steps = (state.data[id] || {steps: []}).steps;
  for (let i = steps.length - 1; i >= 0; i--) {
    const s = steps[i];
    if (s.evaluated_steps !== undefined) {
      return {evaluated: s.evaluated_steps, due: s.evaluated_steps + s.skipped_steps,
              estimate: s.estimate, se: s.estimate_se};
    }
  }
  return null;
}

function coverageText(c) {
  if (!c || !c.due) return '';
  return `exact on ${c.evaluated} of ${c.due} (${fmt(100 * c.evaluated / c.due, 3)}%)`;
}

function renderCharts(ids) {
  const cards = [];
  for (const [key, title, , optional] of METRICS) {
    const series = ids.map((id, i) => {
      const band = key === 'estimate' ? [] : undefined;
      const points = pointsOf(id, key, band);
      return {name: id, color: COLORS[i % COLORS.length], points, band};
    });
    if (optional && !series.some(s => real(s.points).length)) continue;
    const newest = ids.length === 1 ? real(series[0].points).pop() : undefined;
    let latest = newest ? 'now ' + fmt(newest[1]) : '';
    const c = ids.length === 1 ? coverageOf(ids[0]) : null;
    // BLReg's coverage beside it: a sum over few of the due steps is no
    // sign of convergence.
    if (key === 'blreg' && c) latest += ' \u00b7 ' + coverageText(c);
    if (key === 'estimate' && c && finite(c.se)) latest += ' \u00b1 ' + fmt(c.se);
    const log = state.scale[key] ? state.scale[key] === 'log' : autoLog(series);
    cards.push(`<div class="card chart" data-metric="${key}"` +
               (key === 'blreg' && c ? ` data-evaluated="${c.evaluated}" data-due="${c.due}"` : '') +
               `><h3 title="click: ` +
               `${log ? 'linear' : 'log'} scale">${esc(title)}${log ? ' (log)' : ''}` +
               `<span class="latest">${latest}</span></h3>${chartSVG(series, key, log)}</div>`);
  }
  $('charts').innerHTML = cards.join('');
}

function render() {
  const ids = shown();
  $('tab-session').className = state.mode === 'session' ? 'on' : '';
  $('tab-compare').className = state.mode === 'compare' ? 'on' : '';
  renderList();
  renderHeading(ids);
  renderDecisions(ids);
  renderCharts(ids);
}

// ------------------------------------------------------------------ events
// A view change renders at once and polls for what the new view needs.
function changed() { writeHash(); render(); }

$('tab-session').onclick = () => { state.mode = 'session'; changed(); };
$('tab-compare').onclick = () => { state.mode = 'compare'; changed(); };
$('group').onchange = e => {
  state.group = e.target.value;
  state.mode = state.group || state.ticked.length ? 'compare' : state.mode;
  changed();
};
$('sessions').onclick = e => {
  const row = e.target.closest('tr');
  if (!row) return;
  const id = row.dataset.id;
  if (e.target.type === 'checkbox') {
    state.ticked = e.target.checked ? [...new Set([...state.ticked, id])]
                                    : state.ticked.filter(c => c !== id);
    state.group = '';
    state.mode = 'compare';
  } else {
    state.selected = id;
    state.mode = 'session';
  }
  changed();
};
$('charts').onclick = e => {
  const card = e.target.closest('h3') && e.target.closest('.chart');
  if (!card) return;
  const svg = card.querySelector('svg');
  state.scale[card.dataset.metric] = svg.dataset.scale === 'log' ? 'linear' : 'log';
  render();
};
window.addEventListener('hashchange', () => { readHash(); render(); });

readHash();
render();
poll();
