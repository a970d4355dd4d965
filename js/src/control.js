// control.js - tp.cond and tp.whileLoop (torch.cond / jax.lax.cond, torch's
// while_loop): thin wrappers over the core's tp_cond / tp_while_loop
// (wasm tpw_cond / tpw_while_loop; src/capture/control.c). Outside a
// compiled function only the chosen branch runs (each loop step in turn);
// inside one both branches are traced (the body once) and the graph holds
// one cond / while_loop node, so the compiled function chooses at run time
// and exports to ONNX If. The branches take their operands explicitly: a
// traced value they read must be one of the operands (docs/js-api.md).

import { ValueError } from './errors.js';
import { Tensor, getCore, wrapHandle, MAX_OPERANDS } from './tensor.js';
import { hostRegister, hostRelease, throwCore } from './host.js';
import { rebuildResult, flattenOutput } from './structure.js';

function checkFn(f, api, what) {
  if (typeof f !== 'function') throw new TypeError(`${api}: ${what} must be a function`);
}

function checkTensors(list, api, what) {
  if (!Array.isArray(list)) throw new TypeError(`${api}: ${what} must be an array of Tensors`);
  list.forEach((t, i) => {
    if (!(t instanceof Tensor)) throw new TypeError(`${api}: ${what}[${i}] must be a Tensor`);
  });
}

function sameStructure(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

// Calls the core entry with host ids for the functions (released after).
function callCore(api, fns, handles, run) {
  const core = getCore();
  const templates = fns.map(() => null);
  const ids = fns.map((fn, i) =>
    hostRegister({
      kind: 'runner',
      name: `${api} ${fn.role}`,
      fn: fn.fn,
      onTemplate(t) {
        templates[i] = t;
      },
    }),
  );
  const mark = core.stackSave();
  try {
    const inPtr = core.stackAlloc(4 * Math.max(1, handles.length));
    const outPtr = core.stackAlloc(4 * MAX_OPERANDS);
    core.views().u32.set(handles, inPtr >> 2);
    const n = run(ids, inPtr, outPtr);
    if (n < 0) throwCore(api);
    const u32 = core.views().u32;
    const outs = [];
    for (let i = 0; i < n; i++) outs.push(wrapHandle(u32[(outPtr >> 2) + i]));
    return { outs, templates };
  } finally {
    core.stackRestore(mark);
    ids.forEach(hostRelease);
  }
}

/**
 * cond(pred, thenFn, elseFn, operands): thenFn(...operands) when pred is
 * true, else elseFn(...operands). pred: a one-value bool or integer Tensor
 * (or a JS boolean: then the branch is chosen here). Inside a compiled
 * function both branches are traced and must return the same structure of
 * tensors with the same dtypes and shapes (an error names the mismatch).
 */
export function cond(pred, thenFn, elseFn, operands = []) {
  checkFn(thenFn, 'cond', 'thenFn');
  checkFn(elseFn, 'cond', 'elseFn');
  checkTensors(operands, 'cond', 'operands');
  if (typeof pred === 'boolean') { // chosen here; the branch must return tensors, as the core's path requires
    const r = pred ? thenFn(...operands) : elseFn(...operands);
    const ts = [];
    try {
      flattenOutput(r, ts);
    } catch {
      ts.length = 0;
    }
    if (!ts.length) throw new ValueError(`cond: the ${pred ? 'then' : 'else'} function returns no tensor`);
    return r;
  }
  if (!(pred instanceof Tensor)) throw new TypeError('cond: pred must be a Tensor or a boolean');
  const ex = getCore().exports;
  const { outs, templates } = callCore(
    'cond',
    [
      { role: 'then branch', fn: (...ts) => thenFn(...ts) },
      { role: 'else branch', fn: (...ts) => elseFn(...ts) },
    ],
    operands.map((t) => t._handle()),
    ([t, e], inPtr, outPtr) =>
      ex.tpw_cond(pred._handle(), t, e, operands.length, inPtr, outPtr, MAX_OPERANDS),
  );
  const [tt, te] = templates;
  if (!outs.length) // eagerly only the chosen branch ran: it must return tensors, as when compiled
    throw new ValueError(`cond: the ${tt ? 'then' : 'else'} function returns no tensor`);
  if (tt && te && !sameStructure(tt, te)) {
    outs.forEach((t) => t.dispose());
    throw new ValueError('cond: thenFn and elseFn return different structures of tensors');
  }
  return rebuildResult(tt ?? te, outs);
}

/**
 * whileLoop(condFn, bodyFn, init, additional = []): carried = init; while
 * condFn(...carried, ...additional) is true, carried = bodyFn(...carried,
 * ...additional); returns the final carried values (an array, like init).
 * condFn returns one bool/integer value; bodyFn as many tensors as init,
 * of the same dtypes and shapes. Inside a compiled function the body is
 * traced once and the trip count comes from the data at run time.
 */
export function whileLoop(condFn, bodyFn, init, additional = []) {
  checkFn(condFn, 'whileLoop', 'condFn');
  checkFn(bodyFn, 'whileLoop', 'bodyFn');
  checkTensors(init, 'whileLoop', 'init');
  checkTensors(additional, 'whileLoop', 'additional');
  if (init.length === 0) throw new ValueError('whileLoop: init must hold at least one Tensor');
  const ex = getCore().exports;
  const all = [...init, ...additional];
  const { outs } = callCore(
    'whileLoop',
    [
      { role: 'condFn', fn: (...ts) => condFn(...ts) },
      {
        role: 'bodyFn',
        fn: (...ts) => {
          const r = bodyFn(...ts);
          return Array.isArray(r) ? r : [r];
        },
      },
    ],
    all.map((t) => t._handle()),
    ([c, b], inPtr, outPtr) => ex.tpw_while_loop(c, b, init.length, all.length, inPtr, outPtr, MAX_OPERANDS),
  );
  return outs;
}
