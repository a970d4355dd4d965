// shims/assert.mjs - the part of `node:assert/strict` the JS API tests use
// (equal, notEqual, deepEqual, notDeepEqual, ok, match, doesNotMatch, throws,
// rejects, fail), with strict semantics, for running tests/js in a browser.
export class AssertionError extends Error {
  constructor(message) {
    super(message);
    this.name = 'AssertionError';
    this.code = 'ERR_ASSERTION';
  }
}

const show = (v) => {
  try {
    if (typeof v === 'bigint') return `${v}n`;
    if (ArrayBuffer.isView(v)) return `${v.constructor.name}(${v.length}) [${Array.from(v.slice(0, 8)).join(', ')}${v.length > 8 ? ', ...' : ''}]`;
    if (v instanceof Error) return `${v.name}: ${v.message}`;
    const s = JSON.stringify(v, (k, x) => (typeof x === 'bigint' ? `${x}n` : x));
    return s === undefined ? String(v) : s.length > 300 ? s.slice(0, 300) + '...' : s;
  } catch {
    return String(v);
  }
};

function fail(message, dflt) {
  if (message instanceof Error) throw message;
  throw new AssertionError(message ?? dflt);
}

function deepStrict(a, b, seen = new Map()) {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) {
    // node's strict mode: 0 and -0 differ, NaN equals NaN (Object.is)
    return false;
  }
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  if (seen.get(a) === b) return true;
  seen.set(a, b);
  if (ArrayBuffer.isView(a)) {
    if (a.length !== b.length || a.byteLength !== b.byteLength) return false;
    const isFloat = a instanceof Float32Array || a instanceof Float64Array;
    for (let i = 0; i < a.length; i++) {
      if (isFloat ? !(a[i] === b[i] || (Number.isNaN(a[i]) && Number.isNaN(b[i]))) : a[i] !== b[i]) return false;
    }
  } else if (a instanceof Date) {
    if (a.getTime() !== b.getTime()) return false;
  } else if (a instanceof RegExp) {
    if (String(a) !== String(b)) return false;
  } else if (a instanceof Map) {
    if (a.size !== b.size) return false;
    for (const [k, v] of a) if (!b.has(k) || !deepStrict(v, b.get(k), seen)) return false;
  } else if (a instanceof Set) {
    if (a.size !== b.size) return false;
    for (const v of a) if (!b.has(v)) return false;
  } else if (a instanceof Error) {
    if (a.name !== b.name || a.message !== b.message) return false;
  }
  if (Array.isArray(a) && a.length !== b.length) return false;
  const ka = Object.keys(a), kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (const k of ka) {
    if (!Object.prototype.hasOwnProperty.call(b, k)) return false;
    if (!deepStrict(a[k], b[k], seen)) return false;
  }
  return true;
}

function ok(value, message) {
  if (!value) fail(message, `The expression evaluated to a falsy value: ${show(value)}`);
}

const assert = Object.assign((v, m) => ok(v, m), {
  AssertionError,
  ok,
  fail: (m) => fail(m, 'Failed'),
  equal(a, b, m) {
    if (!Object.is(a, b)) fail(m, `Expected values to be strictly equal: ${show(a)} !== ${show(b)}`);
  },
  strictEqual(a, b, m) {
    assert.equal(a, b, m);
  },
  notEqual(a, b, m) {
    if (Object.is(a, b)) fail(m, `Expected "actual" to be strictly unequal to: ${show(b)}`);
  },
  notStrictEqual(a, b, m) {
    assert.notEqual(a, b, m);
  },
  deepEqual(a, b, m) {
    if (!deepStrict(a, b)) fail(m, `Expected values to be strictly deep-equal:\n${show(a)}\n${show(b)}`);
  },
  deepStrictEqual(a, b, m) {
    assert.deepEqual(a, b, m);
  },
  notDeepEqual(a, b, m) {
    if (deepStrict(a, b)) fail(m, `Expected "actual" not to be strictly deep-equal to: ${show(b)}`);
  },
  notDeepStrictEqual(a, b, m) {
    assert.notDeepEqual(a, b, m);
  },
  match(s, re, m) {
    if (typeof s !== 'string' || !re.test(s)) fail(m, `The input did not match the regular expression ${re}. Input: ${show(s)}`);
  },
  doesNotMatch(s, re, m) {
    if (typeof s === 'string' && re.test(s)) fail(m, `The input was expected to not match ${re}. Input: ${show(s)}`);
  },
  throws(fn, expected, m) {
    let threw = false, err;
    try {
      fn();
    } catch (e) {
      threw = true;
      err = e;
    }
    if (!threw) fail(typeof expected === 'string' ? expected : m, 'Missing expected exception.');
    check(err, expected, m);
  },
  async rejects(p, expected, m) {
    let threw = false, err;
    try {
      await (typeof p === 'function' ? p() : p);
    } catch (e) {
      threw = true;
      err = e;
    }
    if (!threw) fail(m, 'Missing expected rejection.');
    check(err, expected, m);
  },
  doesNotThrow(fn, m) {
    try {
      fn();
    } catch (e) {
      fail(typeof m === 'string' ? m : undefined, `Got unwanted exception: ${show(e)}`);
    }
  },
});

function check(err, expected, m) {
  if (expected === undefined || typeof expected === 'string') return;
  if (expected instanceof RegExp) {
    if (!expected.test(String(err))) fail(m, `The error did not match ${expected}: ${show(err)}`);
    return;
  }
  if (typeof expected === 'function') {
    if (expected.prototype !== undefined && err instanceof expected) return;
    if (Error.isPrototypeOf(expected) || expected === Error) fail(m, `The error is not an instance of ${expected.name}: ${show(err)}`);
    if (expected.call({}, err) !== true) fail(m, `The validation function did not return true for ${show(err)}`);
    return;
  }
  if (typeof expected === 'object' && expected !== null) {
    for (const [k, want] of Object.entries(expected)) {
      const got = err?.[k];
      if (want instanceof RegExp && typeof got === 'string') {
        if (!want.test(got)) fail(m, `The error's ${k} ${show(got)} does not match ${want}`);
      } else if (!deepStrict(got, want)) {
        fail(m, `The error's ${k} is ${show(got)}, expected ${show(want)}`);
      }
    }
  }
}

export const { equal, notEqual, deepEqual, notDeepEqual, match, doesNotMatch, throws, rejects, doesNotThrow, strictEqual, deepStrictEqual } = assert;
export { ok };
export default assert;
