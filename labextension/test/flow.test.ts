import { describe, expect, it } from 'vitest';
import { createFlow, flowEdges } from '../src/views/flow';
import { fixture } from './helpers';

const verdict = fixture('verdict_gemm_sm90.json');
const rings = verdict.rings;

describe('the flow diagram', () => {
  it("draws each pipeline as a ring between the task that fills it and the one that drains it, from TS's table", () => {
    expect(flowEdges(verdict.schedule, rings)).toEqual([
      { resource: 'smem_ab', producers: ['LoadTask'], consumers: ['MmaTask'] },
      { resource: 'smem_epi', producers: ['MmaTask'], consumers: ['EpilogueTask'] }
    ]);
    const node = createFlow(verdict.schedule, rings);
    expect([...node.querySelectorAll('.tslab-flow-task text')].map(t => t.textContent)).toEqual(['LoadTask', 'MmaTask', 'EpilogueTask']);
    const drawn = [...node.querySelectorAll<SVGElement>('.tslab-ring')].map(g => [g.getAttribute('data-resource'), g.querySelectorAll('.tslab-ring-stage').length]);
    expect(drawn).toEqual([
      ['smem_ab', rings.smem_ab.num_stages],
      ['smem_epi', rings.smem_epi.num_stages]
    ]);
    expect(node.querySelectorAll('.tslab-flow-arrow').length).toBe(4);
  });

  it('picks a resource on a click or Enter, and marks the picked one', () => {
    const picked: string[] = [];
    const node = createFlow(verdict.schedule, rings, { selected: 'smem_epi', onSelect: r => picked.push(r) });
    const [ab, epi] = node.querySelectorAll<SVGElement>('.tslab-ring');
    expect(epi.classList.contains('tslab-ring-selected')).toBe(true);
    ab.dispatchEvent(new MouseEvent('click'));
    ab.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' }));
    expect(picked).toEqual(['smem_ab', 'smem_ab']);
  });

  it('says so when there is no pipeline between tasks', () => {
    expect(createFlow(verdict.schedule, {}).textContent).toBe('no pipelines between tasks to draw');
  });
});
