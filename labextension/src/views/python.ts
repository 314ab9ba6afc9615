/**
 * Saved values written as Python, the language the notebook's cells are in: parameters (`'fp16'`, `True`,
 * `None`), edits as the keyword arguments that make them, and a captured design's arguments as the `fake`
 * stand-ins `tslab.capture` was called with (`fake.tensor('Float16', (6, 256))`, `fake.stream()`).
 */

/** `value` (JSON) as Python's repr writes it: strings in single quotes, True/False/None, lists and dicts. */
export function pyRepr(value: unknown): string {
  if (value === null || value === undefined) {
    return 'None';
  }
  if (typeof value === 'boolean') {
    return value ? 'True' : 'False';
  }
  if (typeof value === 'number') {
    return String(value);
  }
  if (typeof value === 'string') {
    const quote = value.includes("'") && !value.includes('"') ? '"' : "'";
    return quote + value.replace(/\\/g, '\\\\').replace(new RegExp(quote, 'g'), `\\${quote}`).replace(/\n/g, '\\n') + quote;
  }
  if (Array.isArray(value)) {
    return `[${value.map(pyRepr).join(', ')}]`;
  }
  return `{${Object.entries(value as Record<string, unknown>).map(([k, v]) => `${pyRepr(k)}: ${pyRepr(v)}`).join(', ')}}`;
}

function tuple(items: string[]): string {
  return items.length === 1 ? `(${items[0]},)` : `(${items.join(', ')})`;
}

/** Keyword arguments: `num_stages=4, advance_on_wait=True`. */
export function pyKwargs(values: Record<string, unknown>, item: (v: unknown) => string = pyRepr): string {
  return Object.entries(values).map(([k, v]) => `${k}=${item(v)}`).join(', ');
}

/** One argument of a captured design (`tslab/capture/source.py`'s `arg_spec`) as the Python that makes it. */
export function captureArg(spec: unknown): string {
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) {
    return pyRepr(spec);
  }
  const s = spec as Record<string, unknown>;
  if (typeof s.tensor === 'string' && Array.isArray(s.shape)) {
    const shape = s.shape as (number | null)[];
    const stride = Array.isArray(s.stride) ? (s.stride as (number | null)[]) : null;
    // row-major and dense: the stride fake.tensor gives by default, left out
    const dense = shape.map((_, i) => shape.slice(i + 1).reduce<number | null>((p, d) => (p === null || d === null ? null : p * d), 1));
    const same = stride !== null && stride.length === dense.length && stride.every((x, i) => x === dense[i]);
    return `fake.tensor(${pyRepr(s.tensor)}, ${tuple(shape.map(pyRepr))}${stride && !same ? `, stride=${tuple(stride.map(pyRepr))}` : ''})`;
  }
  if (s.stream) {
    return 'fake.stream()';
  }
  if (Array.isArray(s.tuple)) {
    return tuple(s.tuple.map(captureArg));
  }
  if (Array.isArray(s.list)) {
    return `[${s.list.map(captureArg).join(', ')}]`;
  }
  if (typeof s.dtype === 'string') {
    return `cutlass.${s.dtype}`;
  }
  if (typeof s.object === 'string') {
    return s.object;
  }
  return pyRepr(spec);
}
