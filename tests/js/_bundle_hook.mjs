// tests/js/_bundle_hook.mjs - runs the JS tests on the package's one-file
// build: `node --import ./tests/js/_bundle_hook.mjs --test tests/js/...`
// resolves every import of js/index.js to js/dist/tensorplay.mjs (made by
// scripts/bundle.mjs). Tests that import a js/src/ module directly (the
// loader's) still get that module. Fails loudly when the bundle is missing.
import { register } from 'node:module';
import { existsSync } from 'node:fs';

const bundle = new URL('../../js/dist/tensorplay.mjs', import.meta.url);
if (!existsSync(bundle)) {
  throw new Error(`_bundle_hook: ${bundle.pathname} is missing (bash scripts/build.sh bundle)`);
}
const hooks = `
const ENTRY = ${JSON.stringify(new URL('../../js/index.js', import.meta.url).href)};
const BUNDLE = ${JSON.stringify(bundle.href)};
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  return r.url === ENTRY ? { ...r, url: BUNDLE } : r;
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`);
// tells tests/js/bundle.test.js to check that the hook is active (the test
// processes node --test starts inherit it, with this --import)
process.env.TP_BUNDLE_HOOK = '1';
