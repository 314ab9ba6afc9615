/**
 * The notebooks tslab's commands create, as plain cell sources (pure functions, unit-tested), and the
 * kernel-file reading behind "Check with tslab...": which `@cute.jit` functions a file defines, and
 * stand-in arguments for a host function's parameters.
 */

export interface HostFunction {
  name: string;
  /** Python source of the arguments to pass (`fake` stand-ins for tensors; parameters with defaults left out). */
  args: string;
}

const JIT_DEF = /^@cute\.jit\b[^\n]*\n(?:@[^\n]*\n)*def\s+(\w+)\s*\(/gm;

/** The module-level `@cute.jit` functions of a kernel file, in file order (host functions are among them). */
export function jitFunctions(source: string): HostFunction[] {
  const out: HostFunction[] = [];
  for (const match of source.matchAll(JIT_DEF)) {
    const open = (match.index ?? 0) + match[0].length;
    out.push({ name: match[1], args: standInArgs(paramsText(source, open)) });
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

/** Stand-ins for the parameters without defaults: a fake fp16 tensor for tensors, 1 for anything else. */
export function standInArgs(params: string): string {
  return splitTopLevel(params)
    .filter(p => !p.includes('=') && !p.startsWith('self'))
    .map(p => (/Tensor|Pointer/.test(p) ? 'fake.tensor("f16", (8, 256))' : '1'))
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
        'every edit is checked by TS at once, and the verdict above them, the memory map, the flow and the history beside them ' +
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

/** nbformat 4 JSON of code cells, with the Python 3 kernelspec (so Lab asks for no kernel). */
export function notebookJSON(cells: Cell[]): Record<string, unknown> {
  return {
    cells: cells.map(cell =>
      typeof cell === 'string'
        ? { cell_type: 'code', execution_count: null, metadata: {}, outputs: [], source: cell }
        : { cell_type: 'markdown', metadata: {}, source: cell.markdown }
    ),
    metadata: {
      kernelspec: { display_name: 'Python 3 (ipykernel)', language: 'python', name: 'python3' },
      language_info: { name: 'python' }
    },
    nbformat: 4,
    nbformat_minor: 5
  };
}
