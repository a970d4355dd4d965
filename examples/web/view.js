// view.js - what the web example draws: the captured graph (from g.graph()
// text), the plan (explain().backend_plans), the timing chart. DOM and SVG
// building only; no state (app.js owns that).

export const SVG_NS = 'http://www.w3.org/2000/svg';
const SVG_TAGS = new Set(['svg', 'g', 'rect', 'text', 'path', 'line', 'defs', 'marker', 'title', 'tspan']);

export const fmtMs = (ms) => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms >= 1 ? ms.toFixed(2) : ms.toFixed(3)) + ' ms';
export const fmtBytes = (n) => n >= 2 ** 20 ? `${(n / 2 ** 20).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} bytes`;

export function el(tag, attrs = {}, ...children) {
  const e = SVG_TAGS.has(tag) ? document.createElementNS(SVG_NS, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null && v !== false) e.setAttribute(k, String(v));
  for (const c of children) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
  return e;
}

// ---- the graph text -> nodes -------------------------------------------------------------------------
export function parseGraph(text) {
  const nodes = [];
  const byName = new Map();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#') || line.startsWith('tpgraph') || line.startsWith('data ')) continue;
    let m = /^%([A-Za-z0-9_.]+) = (\w+)(?:\((.*)\))?(?: "([^"]*)")? : ([a-z0-9]+\[[0-9,]*\])/.exec(line);
    let node;
    if (m) {
      const [, name, op, inner, target, type] = m;
      node = { name, op, type, args: [], attrList: [], attrs: '', target };
      if (inner !== undefined) splitOperands(inner, node);
    } else if ((m = /^output\((.*)\)/.exec(line))) {
      node = { name: 'output', op: 'output', type: '', args: [], attrList: [], attrs: '' };
      splitOperands(m[1], node);
    } else continue;
    node.index = nodes.length;
    nodes.push(node);
    byName.set(node.name, node);
  }
  for (const n of nodes) n.inputs = n.args.map((a) => byName.get(a)).filter(Boolean);
  for (const n of nodes) n.users = [];
  for (const n of nodes) for (const i of n.inputs) if (!i.users.includes(n)) i.users.push(n);
  return nodes;
}

function splitOperands(inner, node) {
  // operands are %names, none, numbers; attributes are name=value (lists in [..])
  const parts = [];
  let depth = 0, cur = '';
  for (const ch of inner) {
    if (ch === '[') depth++;
    if (ch === ']') depth--;
    if (ch === ',' && depth === 0) { parts.push(cur.trim()); cur = ''; } else cur += ch;
  }
  if (cur.trim()) parts.push(cur.trim());
  for (const p of parts) {
    if (p.startsWith('%')) node.args.push(p.slice(1));
    else if (p !== 'none') node.attrList.push(p); // name=value, or an immediate scalar
  }
  node.attrs = node.attrList.join(', ');
}

const dims = (type) => (/\[([0-9,]*)\]/.exec(type ?? '')?.[1] ?? '').split(',').filter(Boolean).map(Number);
const attr = (n, key) => n.attrList.find((a) => a.startsWith(`${key}=`))?.slice(key.length + 1);

/**
 * The short attribute text of a box: conv and pool windows (kernel, stride,
 * padding, dilation, groups, depthwise / pointwise), else the attributes
 * when they are short. window=[sh,sw, pt,pl,pb,pr, dh,dw].
 */
export function boxAttrs(n) {
  const win = attr(n, 'window')?.replace(/[[\]]/g, '').split(',').map(Number);
  if (/conv|pool/.test(n.op) && win?.length >= 8) {
    const [sh, sw, pt, pl, pb, pr, dh, dw] = win;
    const parts = [];
    let kind = '';
    if (n.op.startsWith('conv')) {
      const w = dims(n.inputs[1]?.type); // [Cout, Cin/groups, kh, kw]
      const groups = Number(attr(n, 'groups') ?? 1);
      if (w.length === 4) parts.push(`${w[2]}×${w[3]}`);
      if (groups > 1 && w[1] === 1) kind = 'depthwise';
      else if (w[2] === 1 && w[3] === 1 && groups === 1) kind = 'pointwise';
      if (groups > 1) parts.push(`g${groups}`);
    } else {
      const k = attr(n, 'kernel')?.replace(/[[\]]/g, '');
      if (k) parts.push(k.replace(',', '×'));
    }
    parts.push(sh === sw ? `s${sh}` : `s${sh},${sw}`);
    if (pt || pl || pb || pr) parts.push(pt === pl && pl === pb && pb === pr ? `p${pt}` : `p${pt},${pl},${pb},${pr}`);
    if (dh > 1 || dw > 1) parts.push(dh === dw ? `d${dh}` : `d${dh},${dw}`);
    return (kind ? `${kind} ` : '') + parts.join(' ');
  }
  return n.attrs.length < 28 ? n.attrs : '';
}

// ---- big graphs: chains collapsed into one box ------------------------------------------------------------
// A box is a group of nodes: one node, or (collapse) a chain of ops where each
// one's only computed input is the previous one and that one has no other user.
// Constants are folded into their first user's box (counted, not drawn).
export const COLLAPSE_OVER = 80; // ops

export function groupNodes(nodes, collapse) {
  const groups = [];
  const of = new Map();
  for (const n of nodes) {
    if (collapse && n.op === 'get_attr') continue;
    const calc = n.inputs.filter((i) => i.op !== 'get_attr');
    const prev = calc.length === 1 ? calc[0] : null;
    const pg = prev && of.get(prev);
    if (collapse && pg && !['placeholder', 'output'].includes(n.op) && !['placeholder', 'output'].includes(prev.op) &&
        prev.users.length === 1 && pg.nodes[pg.nodes.length - 1] === prev) {
      pg.nodes.push(n);
      of.set(n, pg);
      continue;
    }
    const g = { nodes: [n], index: groups.length };
    groups.push(g);
    of.set(n, g);
  }
  for (const g of groups) {
    const inside = new Set(g.nodes);
    const ins = new Set();
    for (const n of g.nodes) for (const i of n.inputs) if (!inside.has(i) && of.get(i)) ins.add(of.get(i));
    g.inputs = [...ins];
    g.consts = collapse ? g.nodes.reduce((a, n) => a + n.inputs.filter((i) => i.op === 'get_attr').length, 0) : 0;
  }
  return groups;
}

function groupLabel(g) {
  const n = g.nodes[0];
  if (g.nodes.length === 1) {
    const label = n.op === 'get_attr' ? `const ${n.target ?? n.name}` : n.op === 'placeholder' ? `input %${n.name}` : n.op;
    const a = boxAttrs(n);
    const sub = n.op === 'output' ? '' : n.type + (a ? `  ${a}` : '') + (g.consts ? `  +${g.consts} const` : '');
    return { label, sub };
  }
  const ops = g.nodes.map((x) => x.op);
  const label = ops.length <= 3 ? ops.join(' → ') : `${ops[0]} → … → ${ops[ops.length - 1]} (${ops.length} ops)`;
  const last = g.nodes[g.nodes.length - 1];
  const a = boxAttrs(n);
  return { label, sub: last.type + (a ? `  ${a}` : '') + (g.consts ? `  +${g.consts} const` : '') };
}

// ---- layout by topological rank, drawn as SVG ------------------------------------------------------------
export function drawGraph(nodes) {
  const ops = nodes.filter((n) => !['placeholder', 'get_attr', 'output'].includes(n.op)).length;
  const collapse = ops > COLLAPSE_OVER;
  const groups = groupNodes(nodes, collapse);
  // rank = 1 + max rank of the inputs; constants sit just above their first consumer
  const isConst = (g) => g.nodes[0].op === 'get_attr';
  // ranks by a memoized walk over the inputs: an input listed after its user (a cond's
  // subgraph constants, say) still gets its rank first
  const rankOf = (g, depth = 0) => {
    if (g.rank !== undefined) return g.rank;
    if (['placeholder', 'get_attr'].includes(g.nodes[0].op) || depth > groups.length) return (g.rank = 0);
    const calc = g.inputs.filter((i) => !isConst(i) && i !== g);
    return (g.rank = 1 + Math.max(0, ...calc.map((i) => rankOf(i, depth + 1))));
  };
  for (const g of groups) g.rank = undefined;
  for (const g of groups) rankOf(g);
  for (const g of groups) {
    if (!isConst(g)) continue;
    const users = groups.filter((u) => u.inputs.includes(g));
    g.rank = users.length ? Math.max(0, Math.min(...users.map((u) => u.rank)) - 1) : 0;
  }
  const ranks = [];
  for (const g of groups) (ranks[g.rank] ??= []).push(g);
  for (let r = 0; r < ranks.length; r++) ranks[r] ??= [];
  ranks[0].forEach((g, i) => { g.order = i; });
  // one barycenter pass (by the inputs' order in the rank above) to cut crossings
  for (let r = 1; r < ranks.length; r++) {
    const pos = (g) => (g.inputs.length ? g.inputs.reduce((a, i) => a + (i.order ?? 0), 0) / g.inputs.length : g.index);
    ranks[r].sort((a, b) => pos(a) - pos(b) || a.index - b.index).forEach((g, i) => { g.order = i; });
  }
  const CH = 6.6, H = 34, VGAP = collapse ? 22 : 30, HGAP = 14, PAD = 10;
  for (const g of groups) {
    Object.assign(g, groupLabel(g));
    g.w = Math.max(60, Math.ceil(Math.max(g.label.length, g.sub.length) * CH) + 14);
    g.h = g.nodes[0].op === 'output' ? 24 : H;
  }
  const rowW = ranks.map((row) => row.reduce((a, g) => a + g.w, 0) + HGAP * Math.max(0, row.length - 1));
  const width = Math.max(...rowW, 200) + 2 * PAD;
  ranks.forEach((row, r) => {
    let x = PAD + (width - 2 * PAD - rowW[r]) / 2;
    for (const g of row) {
      g.x = x;
      g.y = PAD + r * (H + VGAP);
      x += g.w + HGAP;
    }
  });
  const height = PAD * 2 + ranks.length * (H + VGAP) - VGAP;
  const svg = el('svg', { xmlns: SVG_NS, viewBox: `0 0 ${width} ${height}`, width, height, class: 'graph', role: 'img',
    'aria-label': `graph of ${nodes.length} nodes${collapse ? ` in ${groups.length} boxes (chains collapsed)` : ''}`,
    'data-nodes': nodes.length, 'data-boxes': groups.length, 'data-collapsed': collapse ? 'true' : null });
  svg.append(el('defs', {}, el('marker', { id: 'arrow', viewBox: '0 0 8 8', refX: 8, refY: 4, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
    el('path', { d: 'M0,0 L8,4 L0,8 z', class: 'arrowhead' }))));
  const edges = el('g', { class: 'edges' });
  for (const g of groups) {
    for (const i of g.inputs) {
      const x1 = i.x + i.w / 2, y1 = i.y + i.h, x2 = g.x + g.w / 2, y2 = g.y;
      const my = (y1 + y2) / 2;
      edges.append(el('path', { d: `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2}`, class: isConst(i) ? 'edge const' : 'edge', 'marker-end': 'url(#arrow)' }));
    }
  }
  svg.append(edges);
  for (const g of groups) {
    const n = g.nodes[0];
    const kind = n.op === 'placeholder' ? 'input' : n.op === 'get_attr' ? 'const' : n.op === 'output' ? 'output' : 'op';
    const box = el('g', { class: `node ${kind}${g.nodes.length > 1 ? ' chain' : ''}`, transform: `translate(${g.x},${g.y})`, 'data-op': n.op,
      'data-ids': g.nodes.map((x) => x.name).join(' ') });
    box.append(el('title', {}, g.nodes.map((x) => `%${x.name} = ${x.op}${x.attrs ? ` (${x.attrs})` : ''} : ${x.type}`).join('\n')));
    box.append(el('rect', { width: g.w, height: g.h, rx: 5 }));
    box.append(el('text', { x: g.w / 2, y: g.sub ? 14 : 16, class: 'label' }, g.label));
    if (g.sub) box.append(el('text', { x: g.w / 2, y: 28, class: 'sub' }, g.sub));
    svg.append(box);
  }
  return svg;
}

// The plan: what explain().backend_plans reports (counts by kind, and how
// many kernels run as generated code), drawn as the captured graph's ops
// flowing into kernel groups. Which kernels are the generated ones is not
// reported, so the generated module hangs off the whole kernel column.
export const KERNEL_KINDS = [
  ['gemm', 'matrix multiplies, epilogue fused'],
  ['conv', 'convolutions, epilogue fused'],
  ['pointwise', 'fused elementwise'],
  ['row', 'reductions, softmax, norms'],
  ['op', 'single ops, core kernels'],
];

export function drawPlan(plan, nodes) {
  const ops = nodes ? nodes.filter((n) => !['placeholder', 'get_attr', 'output'].includes(n.op)).length : null;
  const kinds = KERNEL_KINDS.filter(([k]) => plan[k] > 0);
  const W = 520, PAD = 10, BH = 38, GAP = 10, SW = 110, KX = 160, KW = 190, GX = 400;
  const colH = Math.max(BH, kinds.length * (BH + GAP) - GAP);
  const height = PAD * 2 + colH + 46;
  const svg = el('svg', { xmlns: SVG_NS, viewBox: `0 0 ${W} ${height}`, width: W, height, class: 'graph plan', role: 'img',
    'aria-label': `plan of ${plan.kernels} kernels`, 'data-kernels': plan.kernels, 'data-generated': plan.generated });
  svg.append(el('defs', {}, el('marker', { id: 'arrow2', viewBox: '0 0 8 8', refX: 8, refY: 4, markerWidth: 7, markerHeight: 7, orient: 'auto' },
    el('path', { d: 'M0,0 L8,4 L0,8 z', class: 'arrowhead' }))));
  const midY = PAD + colH / 2;
  svg.append(el('g', { class: 'node op', transform: `translate(${PAD},${PAD})` },
    el('rect', { width: SW, height: colH, rx: 5 }),
    el('text', { x: SW / 2, y: colH / 2 - 4, class: 'label' }, 'captured graph'),
    el('text', { x: SW / 2, y: colH / 2 + 12, class: 'sub' }, ops === null ? '' : `${ops} ops`)));
  kinds.forEach(([k, desc], i) => {
    const y = PAD + i * (BH + GAP);
    svg.append(el('path', { d: `M${PAD + SW},${midY} C${KX - 20},${midY} ${KX - 30},${y + BH / 2} ${KX},${y + BH / 2}`, class: 'edge', 'marker-end': 'url(#arrow2)' }));
    svg.append(el('g', { class: `node kernel ${k}`, transform: `translate(${KX},${y})`, 'data-kind': k, 'data-count': plan[k] },
      el('title', {}, `${plan[k]} ${k} kernel(s): ${desc}`),
      el('rect', { width: KW, height: BH, rx: 5 }),
      el('text', { x: KW / 2, y: 15, class: 'label' }, `${plan[k]} × ${k}`),
      el('text', { x: KW / 2, y: 30, class: 'sub' }, desc)));
  });
  if (plan.generated > 0) {
    // a bracket over the kernel column, then the generated module
    const bx = KX + KW + 8;
    svg.append(el('path', { d: `M${bx},${PAD} h6 V${PAD + colH} h-6 M${bx + 6},${midY} H${GX}`, class: 'edge gen', 'marker-end': 'url(#arrow2)' }));
    svg.append(el('g', { class: 'node generated', transform: `translate(${GX},${midY - BH / 2})` },
      el('title', {}, 'the plan reports how many kernels run as generated code, not which'),
      el('rect', { width: W - GX - PAD, height: BH, rx: 5 }),
      el('text', { x: (W - GX - PAD) / 2, y: 15, class: 'label' }, 'generated Wasm'),
      el('text', { x: (W - GX - PAD) / 2, y: 30, class: 'sub' }, `${plan.generated} of ${plan.kernels} kernels`)));
  }
  const ty = PAD + colH + 18;
  svg.append(el('text', { x: PAD, y: ty, class: 'caption' }, `${plan.kernels} kernels; ${plan.generated} of them run as generated SIMD128 code,`));
  svg.append(el('text', { x: PAD, y: ty + 17, class: 'caption' }, `the rest on the core's kernels; arena ${fmtBytes(plan.arena_bytes)}${plan.autotuned ? `; ${plan.autotuned} GEMM shape(s) autotuned` : ''}.`));
  return svg;
}

// ---- timings: medians with 95% intervals ----------------------------------------------------------------------
const pct = (t) => (t.rel * 100).toFixed(t.rel < 0.1 ? 1 : 0);

export function ratioText(base, best) {
  const r = base.median / best.median, lo = base.lo / best.hi, hi = base.hi / best.lo;
  const noisy = !base.converged || !best.converged;
  const same = lo <= 1 && hi >= 1;
  return {
    ratio: r, lo, hi, noisy,
    text: same ? `${best.label} and eager are not distinguishable here (ratio ${r.toFixed(2)}, 95% range ${lo.toFixed(2)}–${hi.toFixed(2)})`
      : `${best.label} runs ${r.toFixed(2)}× as fast as eager (95% range ${lo.toFixed(2)}–${hi.toFixed(2)})`,
  };
}

export function drawChart(timings) {
  const W = 640, LW = 250, BH = 26, GAP = 12, PAD = 10, RW = 150;
  const max = Math.max(...timings.map((t) => t.hi), 1e-6);
  const height = PAD * 2 + timings.length * (BH + GAP) + 40;
  const svg = el('svg', { xmlns: SVG_NS, viewBox: `0 0 ${W} ${height}`, width: W, height, class: 'chart', role: 'img',
    'aria-label': 'median run time per variant with 95% intervals' });
  const scale = (W - LW - RW - PAD) / max;
  timings.forEach((t, i) => {
    const y = PAD + i * (BH + GAP);
    const cls = t.label.startsWith('eager') ? 'bar eager' : t.label.includes('stax') ? 'bar stax' : 'bar other';
    svg.append(el('text', { x: LW - 8, y: y + BH / 2 + 4, class: 'barlabel' }, t.label));
    svg.append(el('rect', { x: LW, y, width: Math.max(1, t.median * scale), height: BH, class: cls },
      el('title', {}, `${t.label}: median ${fmtMs(t.median)}, 95% interval ${fmtMs(t.lo)}–${fmtMs(t.hi)}, min ${fmtMs(t.min)}, ${t.n} samples` +
        (t.reps > 1 ? ` of ${t.reps} calls each` : '') + (t.converged ? '' : ` (NOT within 5%: stopped by the ${t.stop === 'time' ? 'time' : 'run'} cap)`))));
    const cy = y + BH / 2;
    svg.append(el('path', { d: `M${LW + t.lo * scale},${cy - 6} v12 M${LW + t.lo * scale},${cy} H${LW + t.hi * scale} M${LW + t.hi * scale},${cy - 6} v12`, class: 'ci' }));
    svg.append(el('text', { x: LW + Math.max(t.hi, t.median) * scale + 6, y: cy + 4, class: `barvalue${t.converged ? '' : ' noisy'}` },
      `${fmtMs(t.median)} ±${pct(t)}% n=${t.n}${t.converged ? '' : ' noisy'}`));
  });
  const base = timings.find((t) => t.label.startsWith('eager'));
  const best = timings.filter((t) => !t.label.startsWith('eager')).sort((a, b) => a.median - b.median)[0];
  const lines = ['median per call; whiskers: its 95% interval; runs until that is within ±5% (capped)'];
  if (base && best) lines.push(ratioText(base, best).text);
  lines.forEach((s, k) => svg.append(el('text', { x: PAD, y: height - 26 + k * 16, class: 'caption' }, s)));
  return svg;
}

// ---- the kernels of the plan, each with the graph nodes it computes -----------------------------------------
// explain().backend_plans[i].kernel_nodes (names of the lowered graph's
// nodes) and kernel_kinds. Names the captured graph has are shown by op;
// nodes the lowering passes made (a decomposed conv or linear) are counted.
export function drawKernelList(plan, nodes) {
  const byName = new Map((nodes ?? []).map((n) => [n.name, n]));
  const list = el('ol', { class: 'kernel-list', 'aria-label': 'the plan\'s kernels in run order; hover or focus one to see its graph nodes' });
  plan.kernel_nodes.forEach((names, k) => {
    const known = names.filter((n) => byName.has(n));
    const fresh = names.length - known.length;
    const ops = known.map((n) => byName.get(n).op);
    const gen = plan.kernel_generated?.[k];
    const text = `${plan.kernel_kinds?.[k] ?? 'kernel'}: ${ops.join(' → ') || '–'}` +
      (fresh ? ` ${ops.length ? '+ ' : ''}${fresh} node${fresh > 1 ? 's' : ''} not in the captured graph` : '');
    const attrs = { tabindex: 0, 'data-kernel': k, 'data-nodes': known.join(' '), title: names.map((n) => `%${n}`).join(' ') };
    if (gen !== undefined) attrs['data-generated'] = String(gen);
    list.append(el('li', attrs, text, gen === undefined ? '' : el('span', { class: gen ? 'tag gen' : 'tag core' }, gen ? 'generated Wasm' : 'core kernel')));
  });
  return list;
}

/** Marks the boxes of the graph SVG in `box` holding any of `names` (class hl); none: clears. */
export function highlightNodes(box, names) {
  const want = new Set(names);
  let hit = 0;
  for (const g of box.querySelectorAll('g.node')) {
    const on = want.size > 0 && (g.dataset.ids ?? '').split(' ').some((id) => want.has(id));
    g.classList.toggle('hl', on);
    hit += on;
  }
  return hit;
}
