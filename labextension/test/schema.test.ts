// The recorded payloads follow the schemas the Python side validates against (tslab/schemas/, one per kind).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { describe, expect, it } from 'vitest';
import { MIME_TYPE as DESIGN } from '../src/renderers/design';
import { MIME_TYPE as TIMELINE } from '../src/renderers/timeline';
import { MIME_TYPE as TRACE } from '../src/renderers/trace';
import { MIME_TYPE as VERDICT } from '../src/renderers/verdict';
import { ROOT, fixture } from './helpers';

const schema = (kind: string) => JSON.parse(readFileSync(join(ROOT, 'tslab', 'schemas', `${kind}.v1.json`), 'utf8'));
const ajv = new Ajv2020({ strict: false, allErrors: true });
for (const kind of ['design', 'trace', 'verdict', 'timeline']) {
  ajv.addSchema(schema(kind));
}
const validate = (kind: string) => ajv.getSchema(`https://tslab/schemas/${kind}.v1.json`)!;

describe('schemas shared with the Python side', () => {
  it.each([
    ['trace', 'trace_demo_deadlock.json'],
    ['trace', 'trace_demo_race.json'],
    ['trace', 'trace_demo_guards.json'],
    ['verdict', 'verdict_demo_guards.json'],
    ['verdict', 'verdict_gemm_sm90.json'],
    ['verdict', 'verdict_demo_deadlock.json'],
    ['design', 'design_gemm_sm90.tslab.json'],
    ['timeline', 'timeline_gemm_sm90.json']
  ])('%s schema accepts %s', (kind, name) => {
    const check = validate(kind);
    expect(check(fixture(name)), JSON.stringify(check.errors)).toBe(true);
  });

  it('refuses a verdict with an unknown status', () => {
    expect(validate('verdict')({ ...fixture('verdict_gemm_sm90.json'), status: 'FINE' })).toBe(false);
  });

  it('names each MIME type after its schema version', () => {
    expect([VERDICT, TRACE, DESIGN, TIMELINE]).toEqual([
      'application/vnd.tslab.verdict.v1+json',
      'application/vnd.tslab.trace.v1+json',
      'application/vnd.tslab.design.v1+json',
      'application/vnd.tslab.timeline.v1+json'
    ]);
    for (const kind of ['design', 'trace', 'verdict', 'timeline']) {
      expect(schema(kind).title).toContain(`application/vnd.tslab.${kind}.v1+json`);
    }
  });
});
