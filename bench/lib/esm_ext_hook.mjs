// esm_ext_hook.mjs - a Node module resolve hook (module.register) that adds
// ".js" to the extensionless relative imports of @tensorflow/tfjs-core's ESM
// dist files, so that bench code can import dist/register_all_gradients.js
// (tfjs-core's node bundle registers no gradients; the umbrella
// @tensorflow/tfjs, which would, is not installed).
export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (e) {
    if (specifier.startsWith('.') && context.parentURL && context.parentURL.includes('/@tensorflow/tfjs-core/dist/')) {
      try {
        return await next(specifier + '.js', context);
      } catch {
        return next(specifier + '/index.js', context);
      }
    }
    throw e;
  }
}
