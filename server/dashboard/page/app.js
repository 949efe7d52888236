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
  // The round's own figures (every step; all an oracle session, without
  // exact metrics, has besides its prequential loss).
  ['hypergradient_norm', 'hypergradient estimate \u2016h_t\u2016', s => s.hypergradient_norm,
   true],
  ['residual_y', '\u2016\u2207_y L(x_t, y_{t+1}, \u03bb_t)\u2016 after the y loop',
   s => s.residual_y, true],
  ['residual_z', '\u2016\u2207_y g_t(x_t, z_{t+1})\u2016 after the z loop', s => s.residual_z,
   true],
  ['gamma', 'upper step size \u03b3_t', s => s.gamma, true],
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
  const [, , get, , exact] = METRICS.find(m => m[0] === key) || hyperparameterMetric(key);
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

// Hyperparameter charts: one per named group of x (SessionSpec.x_groups,
// or x[i] for a small x), keyed 'hp:<name>', drawn from the steps'
// [name, value] pairs (the group's mean after the step).
const HP = 'hp:';
function hyperparameterMetric(key) {
  const name = key.slice(HP.length);
  return [key, 'hyperparameter ' + name, s => {
    const h = (s.hyperparameters || []).find(p => p[0] === name);
    return h ? h[1] : undefined;
  }, true];
}

// The hyperparameter names of sessions `ids`, in x's order.
function hyperparameterNames(ids) {
  const names = [];
  for (const id of ids) {
    const s = state.sessions.find(s => s.id === id);
    for (const g of (s && s.x_groups) || []) if (!names.includes(g.name)) names.push(g.name);
  }
  return names;
}

// A label per entry of x: its group's name (name[i] inside a larger group).
function entryLabels(s) {
  const out = [];
  for (const g of (s && s.x_groups) || []) {
    for (let i = 0; i < g.size; i++) out.push(g.size === 1 ? g.name : `${g.name}[${i}]`);
  }
  return out;
}

// Why a session has no exact metrics (exact_every = 0).
function noExactReason(s) {
  return s.family.endsWith('oracle') ?
      'no exact metrics: f and g are computed by the client (an oracle session)' :
      'no exact metrics (exact_every = 0)';
}

// ------------------------------------------------------------------ render
// The list's lambda and BLReg cells.  A simple bilevel session has neither
// (a 0 would read as a value): a dash, then its own headline, the mean
// inner gap g(x) - g* over its converged exact evaluations.
function headline(s) {
  const due = (s.evaluated_steps || 0) + (s.skipped_steps || 0);
  const coverage = due > (s.evaluated_steps || 0) ?
      ` <span class="muted coverage">${s.evaluated_steps}/${due}</span>` : '';
  if (s.problem_class !== 'simple_bilevel' && s.exact_every === 0) {
    // No BLReg to show (a 0 would read as a value): the newest prequential
    // loss instead.
    return `<td class="num lambda">${fmt(s.lambda)}</td><td class="num headline" ` +
           `title="${esc(noExactReason(s))}; prequential loss f_t(x_t, y_t) of the newest ` +
           `step">${finite(s.upper_loss_before) ? 'f ' + fmt(s.upper_loss_before) : '\u2014'}` +
           '</td>';
  }
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
    const exact = !s ? '' : s.exact_every === 0 ? noExactReason(s) :
        `exact metrics on ${s.evaluated_steps} of ` +
        `${s.evaluated_steps + (s.skipped_steps || 0)} due step(s)` +
        (s.skipped_steps ? ` \u00b7 estimate ${fmt(s.estimate)} \u00b1 ` +
                           fmt(s.estimate_standard_error) : '');
    // y: the bilevel and multi-task classes' (a simple bilevel session has x only).
    const dims = `x: ${s && s.x_dim}` + (s && s.y_dim !== undefined ? `, y: ${s.y_dim}` : '');
    $('subtitle').textContent = s ? `${s.algorithm} on ${s.family} \u00b7 ${dims} ` +
        `\u00b7 t = ${s.next_t - 1} \u00b7 ${exact}` : '';
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
    const labels = entryLabels(state.sessions.find(s => s.id === id));
    const listed = d.x.slice(0, DECISION_LISTED).map((v, k) =>
        (labels[k] ? `<span class="muted">${esc(labels[k])}</span> ` : '') + fmt(v)).join('  ') +
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
  const metrics = METRICS.concat(hyperparameterNames(ids).map(n => hyperparameterMetric(HP + n)));
  for (const [key, title, , optional] of metrics) {
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
    cards.push(`<div class="card chart" data-metric="${esc(key)}"` +
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
