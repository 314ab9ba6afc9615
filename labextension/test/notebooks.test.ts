// "Check with tslab..." reads the kernel file's @cute.jit functions and writes a notebook that captures one.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  checkFileCells,
  defaultKernel,
  designNotebookCells,
  designNotebookStem,
  jitFunctions,
  notebookJSON,
  openDesignCells,
  standInArgs
} from '../src/notebooks';
import { ROOT } from './helpers';

describe('kernel files', () => {
  it('lists the @cute.jit functions of a kernel file, host function with tensor stand-ins', () => {
    const source = readFileSync(join(ROOT, 'tests', 'fixtures', 'ring_copy.py'), 'utf8');
    const host = jitFunctions(source).find(f => f.name === 'ring_copy')!;
    expect(host.args).toBe('fake.tensor("f16", (8, 256)), fake.tensor("f16", (8, 256))');
    expect(jitFunctions(source).map(f => f.name)).not.toContain('ring_copy_kernel');
  });

  it('guesses fake tensors big enough for the tiles the kernel divides them into, and shows the signature', () => {
    const source = readFileSync(join(ROOT, 'notebooks', 'kernels', 'attention_schedule.py'), 'utf8');
    const host = jitFunctions(source).find(f => f.name === 'attention')!;
    // q.shape[0] // tile_m with tile_m = 128: 8 rows would be no query tile at all, and the trace fails
    expect(host.args).toBe('fake.tensor("f16", (128, 256)), 1');
    expect(host.signature).toBe('attention(q: cute.Tensor, kv_tiles: cutlass.Int32, sms: cutlass.Constexpr = 132)');
    expect(host.doc).toMatch(/^Launch over the query tiles of ``q``/);
  });

  it('leaves parameters with defaults out', () => {
    expect(standInArgs('a: cute.Tensor, n: int, *, flag: bool = False')).toBe('fake.tensor("f16", (8, 256)), 1');
  });

  it('writes a notebook that captures and checks the function', () => {
    const cells = checkFileCells('ring_copy.py', 'ring_copy', 'fake.tensor("f16", (8, 256))');
    expect(cells[1]).toBe('design = tslab.capture_file("ring_copy.py", "ring_copy", fake.tensor("f16", (8, 256)))\nverdict = tslab.check(design)\nverdict');
    expect((notebookJSON(cells) as any).metadata.kernelspec.name).toBe('python3');
  });
});

describe('design notebooks', () => {
  it('puts a Studio on a catalog kernel or on a saved design', () => {
    const cells = designNotebookCells('gemm_sm90');
    expect(cells[2]).toBe('studio = Studio(design("gemm_sm90"))\nstudio');
    // It opens with a line on what the notebook is for, not with two unexplained code cells.
    const nb = notebookJSON(cells) as { cells: { cell_type: string; source: string }[] };
    expect(nb.cells.map(c => c.cell_type)).toEqual(['markdown', 'code', 'code']);
    // where the Studio puts things: the swimlane below, never "on the right"
    expect(nb.cells[0].source).toContain('the schedule swimlane below');
    expect(nb.cells[0].source).not.toContain('on the right');
    expect(nb.cells[0].source).toMatch(/^# A tslab Studio on `gemm_sm90`/);
    expect(defaultKernel(['grid_stride_copy', 'tma_copy', 'gemm_sm90'])).toBe('tma_copy'); // something to edit
    expect(defaultKernel(['grid_stride_copy'])).toBe('grid_stride_copy');
    expect(openDesignCells('gemm.tslab.json', '{}')[1]).toBe('studio = Studio(tslab.Design.from_json(open("gemm.tslab.json").read()))\nstudio');
    expect(openDesignCells(null, '{"kernel": "tma_copy"}')[1]).toBe('studio = Studio(tslab.Design.from_json("{\\"kernel\\": \\"tma_copy\\"}"))\nstudio');
  });
});

describe('the notebook a saved Studio opens', () => {
  it('is named after its design, not design.ipynb whatever the design', () => {
    expect(designNotebookStem({ kernel: 'gemm_sm90', params: {} })).toBe('gemm_sm90');
    expect(designNotebookStem({ kernel: 'row_copy.py::copy rows' })).toBe('row_copy.py_copy_rows');
    expect(designNotebookStem({})).toBe('design');
    expect(designNotebookStem(null)).toBe('design');
  });

  it('gives every cell an id, unique in the notebook (nbformat 4.5)', () => {
    const nb = notebookJSON(designNotebookCells('tma_copy')) as { cells: { id: string }[]; nbformat_minor: number };
    const ids = nb.cells.map(c => c.id);
    expect(nb.nbformat_minor).toBe(5);
    expect(ids.every(id => /^[a-zA-Z0-9_-]{1,64}$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });
});


describe("tslab's notebooks", () => {
  it('carry the metadata that marks them, and their panel gets the class while it is there', async () => {
    const { markTslabNotebook, TSLAB_NOTEBOOK_CLASS } = await import('../src/notebook_marks');
    const nb = notebookJSON(['print(1)']) as { metadata: Record<string, unknown> };
    expect(nb.metadata.tslab).toEqual({ notebook: 1 });
    const listeners: (() => void)[] = [];
    let metadata: Record<string, unknown> = { ...nb.metadata };
    const classes = new Set<string>();
    const panel = {
      context: { ready: Promise.resolve() },
      model: { getMetadata: (key: string) => metadata[key], metadataChanged: { connect: (fn: () => void) => listeners.push(fn) } },
      toggleClass: (name: string, force?: boolean) => (force ? classes.add(name) : classes.delete(name))
    };
    await markTslabNotebook(panel);
    expect(classes.has(TSLAB_NOTEBOOK_CLASS)).toBe(true);
    metadata = { kernelspec: {} }; // someone removed it: an ordinary notebook again
    listeners.forEach(fn => fn());
    expect(classes.has(TSLAB_NOTEBOOK_CLASS)).toBe(false);
  });
});
