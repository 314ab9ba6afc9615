/**
 * The notebooks tslab's commands create, as plain cell sources (pure functions, unit-tested), and the
 * kernel-file reading behind "Check with tslab...": which `@cute.jit` functions a file defines, and
 * stand-in arguments for a host function's parameters.
 */

export interface HostFunction {
  name: string;
  /** Python source of the arguments to pass (`fake` stand-ins for tensors; parameters with defaults left out). */
  args: string;
  /** The function's signature as written (`attention(q: cute.Tensor, kv_tiles: cutlass.Int32, sms=132)`). */
  signature: string;
  /** The first line of its docstring, or ''. */
  doc: string;
}

const JIT_DEF = /^@cute\.jit\b[^\n]*\n(?:@[^\n]*\n)*def\s+(\w+)\s*\(/gm;

/** The module-level `@cute.jit` functions of a kernel file, in file order (host functions are among them). */
export function jitFunctions(source: string): HostFunction[] {
  const out: HostFunction[] = [];
  const constants = moduleConstants(source);
  for (const match of source.matchAll(JIT_DEF)) {
    const open = (match.index ?? 0) + match[0].length;
    const params = paramsText(source, open);
    const body = source.slice(open + params.length);
    const doc = /^\)[^\n]*:\s*\n\s*(?:"""|''')\s*([^\n]*?)\s*(?:"""|'''|$)/m.exec(body)?.[1] ?? '';
    out.push({
      name: match[1],
      args: standInArgs(params, source, constants),
      signature: `${match[1]}(${params.split('\n').map(l => l.trim()).join(' ').replace(/\s+/g, ' ').trim()})`,
      doc
    });
  }
  return out;
}

/** Whole-number constants set at module level (`STRIP = 128`, `tile_m, tile_n = 128, 64`). */
export function moduleConstants(source: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of source.matchAll(/^([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*=\s*(\d[\d_]*(?:\s*,\s*\d[\d_]*)*)\s*(?:#.*)?$/gm)) {
    const names = m[1].split(',').map(n => n.trim());
    const values = m[2].split(',').map(v => Number(v.trim().replace(/_/g, '')));
    if (names.length === values.length) {
      names.forEach((n, i) => out.set(n, values[i]));
    }
  }
  return out;
}

function paramsText(source: string, open: number): string {
  let depth = 1;
  for (let i = open; i < source.length; i++) {
    depth += source[i] === '(' || source[i] === '[' ? 1 : source[i] === ')' || source[i] === ']' ? -1 : 0;
    if (depth === 0) {
      return source.slice(open, i);
    }
  }
  return '';
}

function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    depth += '([{'.includes(c) ? 1 : ')]}'.includes(c) ? -1 : 0;
    if (c === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts.map(p => p.trim()).filter(p => p && p !== '*' && p !== '/' && !p.startsWith('**'));
}

/** The fake tensor's shape for parameter `name`: 8 x 256, each extent raised to what the kernel divides it by
 * (`q.shape[0] // tile_m` with `tile_m = 128` at module level: at least 128 rows), so no tile count comes out 0. */
function standInShape(name: string, source: string, constants: Map<string, number>): number[] {
  const shape = [8, 256];
  const escaped = name.replace(/[^\w]/g, '');
  for (const m of source.matchAll(new RegExp(`\\b${escaped}\\.shape\\[(\\d)\\]\\s*//\\s*(\\w+)`, 'g'))) {
    const dim = Number(m[1]);
    const by = /^\d+$/.test(m[2]) ? Number(m[2]) : constants.get(m[2]);
    if (dim < shape.length && by !== undefined && by > shape[dim]) {
      shape[dim] = by;
    }
  }
  return shape;
}

/** Stand-ins for the parameters without defaults: a fake fp16 tensor for tensors (big enough for the tiles the
 * kernel divides it into, where `source` says), 1 for anything else. */
export function standInArgs(params: string, source = '', constants: Map<string, number> = moduleConstants(source)): string {
  return splitTopLevel(params)
    .filter(p => !p.includes('=') && !p.startsWith('self'))
    .map(p => {
      if (!/Tensor|Pointer/.test(p)) {
        return '1';
      }
      const [rows, cols] = standInShape(p.split(':')[0].trim(), source, constants);
      return `fake.tensor("f16", (${rows}, ${cols}))`;
    })
    .join(', ');
}

function pyString(text: string): string {
  return JSON.stringify(text);
}

/** A notebook that captures `fn` of the kernel file `file` (a path relative to the notebook) and checks it. */
export function checkFileCells(file: string, fn: string, args: string): string[] {
  const call = [pyString(file), pyString(fn), ...(args.trim() ? [args.trim()] : [])].join(', ');
  return [
    `# Check ${fn} of ${file} with tslab: capture its TaskManager on the CPU, then run TS's checker.\nimport tslab\nfrom tslab import fake`,
    `design = tslab.capture_file(${call})\nverdict = tslab.check(design)\nverdict`
  ];
}

/** A cell: Python source, or a markdown cell that says what the notebook is for. */
export type Cell = string | { markdown: string };

/** The kernel "New design notebook" offers first: one with pipelines and a schedule to edit. */
export const FIRST_KERNEL = 'tma_copy';

/** `FIRST_KERNEL` when the catalog has it, else the catalog's first kernel. */
export function defaultKernel(names: string[]): string {
  return names.includes(FIRST_KERNEL) ? FIRST_KERNEL : names[0];
}

/** A notebook with a Studio on a catalog kernel, opening with a line on what to do with it. */
export function designNotebookCells(kernel: string): Cell[] {
  return [
    {
      markdown:
        `# A tslab Studio on \`${kernel}\`\n\nEdit its pipelines and schedules in the editors (the tabs in their own scrolling box): ` +
        'every edit is checked by TS at once, and the verdict and history above them, the memory map and the flow beside them ' +
        '(above them in a narrow notebook) and the schedule swimlane below follow it. The GPU tab compiles the design on show.'
    },
    `import tslab\nfrom tslab.kernels import design\nfrom tslab.widgets import Studio`,
    `studio = Studio(design(${pyString(kernel)}))\nstudio`
  ];
}

/** A notebook with a Studio on a saved design: read from `file` when given, else from the design's JSON. */
export function openDesignCells(file: string | null, json: string): string[] {
  const read = file ? `tslab.Design.from_json(open(${pyString(file)}).read())` : `tslab.Design.from_json(${pyString(json)})`;
  return [`import tslab\nfrom tslab.widgets import Studio`, `studio = Studio(${read})\nstudio`];
}

/** The name of the notebook "Open in a notebook" writes for a design with no file of its own (a Studio's saved
 * output): its kernel's name as a file name (`gemm_sm90`, a captured kernel's label), `design` when it has none. */
export function designNotebookStem(design: unknown): string {
  const kernel = (design as { kernel?: unknown } | null)?.kernel;
  const stem = typeof kernel === 'string' ? kernel.replace(/[^\w.-]+/g, '_').replace(/^[._-]+|[._-]+$/g, '') : '';
  return stem || 'design';
}

/** The notebook metadata key that marks a tslab notebook (the tutorials, the notebooks this extension writes): its
 * printed output wraps between words (`notebook_marks.ts`). */
export const TSLAB_NOTEBOOK_KEY = 'tslab';
export const TSLAB_NOTEBOOK_METADATA = { notebook: 1 };

/** nbformat 4 JSON of code cells, with the Python 3 kernelspec (so Lab asks for no kernel), marked as tslab's. */
export function notebookJSON(cells: Cell[]): Record<string, unknown> {
  return {
    // nbformat 4.5 gives every cell an id (unique in its notebook); without one the server warns and adds its own
    cells: cells.map((cell, i) =>
      typeof cell === 'string'
        ? { id: `tslab-cell-${i}`, cell_type: 'code', execution_count: null, metadata: {}, outputs: [], source: cell }
        : { id: `tslab-cell-${i}`, cell_type: 'markdown', metadata: {}, source: cell.markdown }
    ),
    metadata: {
      kernelspec: { display_name: 'Python 3 (ipykernel)', language: 'python', name: 'python3' },
      language_info: { name: 'python' },
      [TSLAB_NOTEBOOK_KEY]: TSLAB_NOTEBOOK_METADATA
    },
    nbformat: 4,
    nbformat_minor: 5
  };
}
