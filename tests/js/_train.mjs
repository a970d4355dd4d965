// _train.mjs - the training loop the training tests share: `steps` optimizer
// steps (zeroGrad, the loss, backward, step), each in its own tp.scope;
// returns the losses in order. Not a test (files starting with _ are helpers).
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
