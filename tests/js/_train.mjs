// _train.mjs - the training loop the training tests share: `steps` optimizer
// steps (zeroGrad, the loss, backward, step), each in its own tp.scope;
// returns the losses in order; and their synthetic task (sectors). Not a
// test (files starting with _ are helpers).
import * as tp from '../../js/index.js';

export function trainSteps(opt, steps, lossFn) {
  const losses = [];
  for (let step = 0; step < steps; step++) {
    losses.push(tp.scope(() => {
      opt.zeroGrad();
      const loss = lossFn();
      loss.backward();
      opt.step();
      return loss.item();
    }));
  }
  return losses;
}

/** 3 classes by angle sector of n points in the unit disc (a fixed LCG):
 * { x [n, 2], y int32 [n], labels (the classes as numbers) }. */
export function sectors(n) {
  let s = 12345;
  const r = () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648);
  const xs = [], ys = [];
  for (let i = 0; i < n; i++) {
    const th = r() * 2 * Math.PI, rad = 0.2 + 0.8 * r();
    xs.push(rad * Math.cos(th), rad * Math.sin(th));
    ys.push(Math.floor((3 * th) / (2 * Math.PI)));
  }
  return { x: tp.tensor(xs, { shape: [n, 2] }), y: tp.tensor(ys, { dtype: 'int32' }), labels: ys };
}
