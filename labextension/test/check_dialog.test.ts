import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jitFunctions } from '../src/notebooks';
import { CheckBody } from '../src/check_dialog';
import { ROOT } from './helpers';

describe('the "Check with tslab..." dialog', () => {
  it("shows the host function's signature and docstring beside the arguments it guessed", () => {
    const source = readFileSync(join(ROOT, 'notebooks', 'kernels', 'attention_schedule.py'), 'utf8');
    const body = new CheckBody(jitFunctions(source));
    expect(body.node.querySelector('.tslab-check-signature')!.textContent).toBe('def attention(q: cute.Tensor, kv_tiles: cutlass.Int32, sms: cutlass.Constexpr = 132)');
    expect(body.node.querySelector('.tslab-check-doc')!.textContent).toContain('query tiles');
    expect(body.getValue()).toEqual({ fn: 'attention', args: 'fake.tensor("f16", (128, 256)), 1' });
  });
});
