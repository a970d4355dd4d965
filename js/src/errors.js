// errors.js - the exceptions of the package. Every failing core call throws a
// TensorPlayError (or a subclass) carrying the tp_status code and the C
// message (tpw_last_error).

/** tp_status names, in the order of enum tp_status (src/tensorplay.h). */
export const STATUS_NAMES = Object.freeze([
  'OK',
  'INVALID_ARG',
  'UNSUPPORTED',
  'OUT_OF_MEMORY',
  'CAPTURE',
  'PARSE',
  'IO',
  'DISPOSED',
  'HOST',
  'INTERNAL',
  'TYPE',
  'VALUE',
  'RUNTIME',
  'ASSERTION',
  'INVALID_BACKEND',
]);

export const Status = Object.freeze(Object.fromEntries(STATUS_NAMES.map((n, i) => [n, i])));

export class TensorPlayError extends Error {
  /**
   * @param {string} message
   * @param {number} [code] a tp_status code (default INTERNAL)
   */
  constructor(message, code = Status.INTERNAL, options) {
    super(message, options);
    this.name = 'TensorPlayError';
    /** tp_status code (number) */
    this.code = code;
    /** tp_status name, e.g. 'INVALID_ARG' */
    this.status = STATUS_NAMES[code] ?? `STATUS_${code}`;
  }
}

/** A capture failed: a graph break under fullgraph, mixed traces, ... */
export class GraphCaptureError extends TensorPlayError {
  constructor(message, options) {
    super(message, Status.CAPTURE, options);
    this.name = 'GraphCaptureError';
  }
}

/** A tensor (or compiled function, graph) was used after dispose(). */
export class DisposedError extends TensorPlayError {
  constructor(message = 'tensor was disposed', options) {
    super(message, Status.DISPOSED, options);
    this.name = 'DisposedError';
  }
}

/** Python's ValueError (the seed raises it; JS has no built-in twin). */
export class ValueError extends TensorPlayError {
  constructor(message, options) {
    super(message, Status.VALUE, options);
    this.name = 'ValueError';
  }
}

/** Python's RuntimeError. `e instanceof RuntimeError` also holds for an
 * InvalidBackend (TensorPlay's is both a ValueError and a RuntimeError). */
export class RuntimeError extends TensorPlayError {
  constructor(message, options) {
    super(message, Status.RUNTIME, options);
    this.name = 'RuntimeError';
  }

  static [Symbol.hasInstance](x) {
    if (Function.prototype[Symbol.hasInstance].call(this, x)) return true;
    // eslint-disable-next-line no-use-before-define
    return this === RuntimeError && Function.prototype[Symbol.hasInstance].call(InvalidBackend, x);
  }
}

/** Python's AssertionError. */
export class AssertionError extends TensorPlayError {
  constructor(message, options) {
    super(message, Status.ASSERTION, options);
    this.name = 'AssertionError';
  }
}

/** The close matches an InvalidBackend message names ("did you mean: 'a' or 'b'?"). */
function suggestionsIn(message) {
  const m = /did you mean: '([^']*)'(?: or '([^']*)')?\?/.exec(String(message ?? ''));
  return m ? [m[1], ...(m[2] !== undefined ? [m[2]] : [])] : [];
}

/**
 * An unknown or unavailable backend name. .suggestions: the close matches
 * (at most two, best first; [] when none). A ValueError, and
 * `instanceof RuntimeError` holds too (TensorPlay's InvalidBackend
 * subclasses both); .code/.status are INVALID_BACKEND.
 */
export class InvalidBackend extends ValueError {
  constructor(message, options) {
    super(message, options);
    this.name = 'InvalidBackend';
    this.code = Status.INVALID_BACKEND;
    this.status = 'INVALID_BACKEND';
    this.suggestions = Object.freeze(
      Array.isArray(options?.suggestions) ? options.suggestions.slice() : suggestionsIn(message));
  }
}

/** The error object for a status code and message. The seed's TypeError is
 * a plain JS TypeError carrying .code and .status. */
export function errorFromStatus(code, message) {
  switch (code) {
    case Status.CAPTURE: return new GraphCaptureError(message);
    case Status.DISPOSED: return new DisposedError(message);
    case Status.VALUE: return new ValueError(message);
    case Status.RUNTIME: return new RuntimeError(message);
    case Status.ASSERTION: return new AssertionError(message);
    case Status.INVALID_BACKEND: return new InvalidBackend(message);
    case Status.TYPE: {
      const e = new TypeError(message);
      e.code = code;
      e.status = 'TYPE';
      return e;
    }
    default: return new TensorPlayError(message, code);
  }
}

/**
 * The error of the last failed core call (tpw_last_status / tpw_last_error).
 * context, when given, prefixes the message ("toArray(): ...").
 */
export function lastError(core, context) {
  const ex = core.exports;
  let code = ex.tpw_last_status();
  let msg = core.readCString(ex.tpw_last_error());
  if (code === Status.OK) {
    code = Status.INTERNAL;
    msg = msg || 'the core reported a failure without a status';
  }
  if (context) msg = `${context}: ${msg}`;
  return errorFromStatus(code, msg);
}

export function throwLast(core, context) {
  throw lastError(core, context);
}

/** Throws when status is not OK. */
export function check(core, status, context) {
  if (status !== Status.OK) {
    const e = lastError(core, context);
    if (e.code !== status && status > 0 && status < STATUS_NAMES.length) {
      // trust the returned status over a stale last_status
      throw errorFromStatus(status, e.message);
    }
    throw e;
  }
}

// Runs call(out) (an ABI function that writes a malloc'ed (pointer, length)
// pair at out), checks its status and returns a copy of the bytes; the core's
// buffer is freed either way.
export function takeBytes(core, call, what) {
  const mark = core.stackSave();
  try {
    const out = core.stackAlloc(8);
    check(core, call(out), what);
    const i32 = core.views().i32;
    const p = i32[out >> 2] >>> 0;
    const len = i32[(out >> 2) + 1];
    try {
      return core.views().u8.slice(p, p + len);
    } finally {
      core.free(p);
    }
  } finally {
    core.stackRestore(mark);
  }
}
