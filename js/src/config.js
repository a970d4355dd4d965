// config.js - tp.compiler.config: the seed's `config` module. Every key lives
// in the core (tpw_config_get / tpw_config_set); values cross as tpw_value.
// Setting stores any value (compile() validates, in the seed's order); an
// unknown key throws the core's ValueError ("unknown config key 'x'").

import { KIND, describeValue, need, readValue, throwCore, withScratch, VALUE_SIZE } from './host.js';
import { Status } from './errors.js';

/** The keys, in the core's order (JS spelling; the Python spelling works too). */
export const CONFIG_KEYS = Object.freeze([
  'assumeStaticByDefault',
  'verbose',
  'failOnRecompileLimitHit',
  'forceDisableCaches',
  'dynamicShapes',
  'recompileLimit',
  'accumulatedRecompileLimit',
  'threads',
]);

const snake = (k) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const camel = (k) => k.replace(/_([a-z])/g, (_, c) => c.toUpperCase());

// Values of kind "other" (objects, functions) cannot be read back from the
// core, only their type name: the JS value set last is kept here.
const others = new Map();

export function configGet(key) {
  const set = need('tpw_config_get');
  return withScratch((a) => {
    const out = a.bytes(VALUE_SIZE);
    const st = set(a.str(key), out);
    if (st !== Status.OK) throwCore();
    const v = readValue(out);
    if (v.kind === KIND.OTHER) {
      const kept = others.get(camel(key));
      return kept !== undefined ? kept : Object.freeze({ type: v.type });
    }
    return v.value;
  });
}

export function configSet(key, value) {
  const set = need('tpw_config_set');
  withScratch((a) => {
    const st = set(a.str(key), a.values([describeValue(value)]));
    if (st !== Status.OK) throwCore();
  });
  const d = describeValue(value);
  if (d.kind === KIND.OTHER) others.set(camel(key), value);
  else others.delete(camel(key));
}

export function configReset() {
  need('tpw_config_reset')();
  others.clear();
}

const methods = {
  /** Restores every default. */
  reset: configReset,
  /** The current values as a plain object. */
  toJSON() {
    return Object.fromEntries(CONFIG_KEYS.map((k) => [k, configGet(k)]));
  },
  /** The keys (JS spelling). */
  keys() {
    return CONFIG_KEYS.slice();
  },
};

/**
 * tp.compiler.config: a proxy whose string properties are config keys.
 * Reading an unknown key gives undefined; setting one throws ValueError.
 */
export const config = new Proxy(Object.create(null), {
  get(target, prop) {
    if (typeof prop !== 'string') {
      if (prop === Symbol.toStringTag) return 'tensorplay.compiler.config';
      if (prop === Symbol.for('nodejs.util.inspect.custom')) return () => methods.toJSON();
      return undefined;
    }
    if (Object.prototype.hasOwnProperty.call(methods, prop)) return methods[prop];
    if (CONFIG_KEYS.includes(prop) || CONFIG_KEYS.includes(camel(prop))) return configGet(prop);
    return undefined;
  },
  set(target, prop, value) {
    if (typeof prop !== 'string' || Object.prototype.hasOwnProperty.call(methods, prop)) {
      throw new TypeError(`config.${String(prop)} cannot be assigned`);
    }
    configSet(prop, value);
    return true;
  },
  has(target, prop) {
    return typeof prop === 'string' && (CONFIG_KEYS.includes(prop) || CONFIG_KEYS.includes(camel(prop)));
  },
  ownKeys() {
    return CONFIG_KEYS.slice();
  },
  getOwnPropertyDescriptor(target, prop) {
    if (typeof prop === 'string' && CONFIG_KEYS.includes(prop)) {
      return { value: configGet(prop), writable: true, enumerable: true, configurable: true };
    }
    return undefined;
  },
  deleteProperty(target, prop) {
    throw new TypeError(`config.${String(prop)} cannot be deleted (use config.reset())`);
  },
  defineProperty(target, prop) {
    throw new TypeError(`config.${String(prop)}: use assignment`);
  },
});

export { snake as _snake, camel as _camel };
