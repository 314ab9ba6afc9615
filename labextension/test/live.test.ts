import { describe, expect, it } from 'vitest';
import { LiveOrSaved, WIDGET_VIEW } from '../src/renderers/live';
import { MIME_TYPE as DESIGN } from '../src/renderers/design';
import { Widget } from '@lumino/widgets';
import { fixture } from './helpers';

/** A stand-in for ipywidgets' renderer: draws an element when the kernel has the model, else its error text. */
class FakeWidgetRenderer extends Widget {
  renders = 0;
  constructor(private readonly known: Set<string>) {
    super();
  }
  async renderModel(model: any) {
    this.renders++;
    if (this.known.has(model.data[WIDGET_VIEW].model_id)) {
      this.node.replaceChildren(Object.assign(document.createElement('div'), { className: 'live-studio' }));
    } else {
      // the kernel's widgets are still loading ("later"), or loaded without this model
      this.node.textContent = model.data[WIDGET_VIEW].model_id === 'later' ? 'Loading widget...' : 'Error displaying widget: model not found';
    }
  }
}

const design = fixture('design_gemm_sm90.tslab.json');
const studioOutput = (id: string, trusted = true) => ({
  trusted,
  data: { [WIDGET_VIEW]: { model_id: id, version_major: 2, version_minor: 0 }, [DESIGN]: { ...design, widget: 'Studio' }, 'text/plain': 'Studio(...)' },
  metadata: {},
  setData: () => undefined
});

function make(known: Set<string>) {
  const made: FakeWidgetRenderer[] = [];
  const renderer = new LiveOrSaved({ mimeType: DESIGN } as any, () => {
    const r = new FakeWidgetRenderer(known);
    made.push(r);
    return r as any;
  });
  return { renderer, made };
}

describe('a tslab widget output, live or saved', () => {
  it('shows the live widget while the kernel has its model, and does not redraw it when only the payload changes', async () => {
    const { renderer, made } = make(new Set(['m1']));
    await renderer.renderModel(studioOutput('m1') as any);
    expect(renderer.showing).toBe('live');
    expect(renderer.node.querySelector('.live-studio')).not.toBeNull();
    expect(renderer.node.querySelector('.tslab-design')).toBeNull();
    await renderer.renderModel(studioOutput('m1') as any); // update_display_data with a newer payload
    expect(made.length).toBe(1);
    expect(made[0].renders).toBe(1);
  });

  it('draws the saved design and verdict with a line to run the cell when the model is gone', async () => {
    const { renderer } = make(new Set());
    await renderer.renderModel(studioOutput('gone') as any);
    expect(renderer.showing).toBe('saved');
    const shown = [...renderer.node.children].filter(c => !c.classList.contains('lm-mod-hidden'));
    expect(shown.map(c => c.className.split(' ').includes('tslab-saved-note'))).toEqual([true, false]);
    expect(renderer.node.textContent).not.toContain('Error displaying widget'); // the failed live view is gone
    expect(shown.map(c => c.textContent).join('')).not.toContain('Error displaying widget');
    expect(renderer.node.querySelector('.tslab-saved-note')!.textContent).toBe(
      'saved Studio output: what this cell showed (with the edits made in it): its design with its edits, and its verdict with the flow, memory map and schedule; not the editors, the GPU tab or the history. Run the cell to edit it.'
    );
    expect(renderer.node.querySelector('.tslab-design .tslab-badge')!.textContent).toBe('SAFE');
    expect(renderer.node.querySelectorAll('.tslab-lane').length).toBe(3);
  });

  it('switches to the live widget when the kernel restores the model later', async () => {
    const known = new Set<string>();
    const { renderer, made } = make(known);
    await renderer.renderModel(studioOutput('later') as any);
    expect(renderer.showing).toBe('saved');
    made[0].node.replaceChildren(document.createElement('span')); // ipywidgets re-renders once the state is restored
    await new Promise(resolve => setTimeout(resolve, 0));
    expect(renderer.showing).toBe('live');
    expect(renderer.node.querySelector('.tslab-saved-note')!.classList.contains('lm-mod-hidden')).toBe(true);
  });

  it('never draws a widget for an untrusted output, and draws a plain design as before', async () => {
    const { renderer, made } = make(new Set(['m1']));
    await renderer.renderModel(studioOutput('m1', false) as any);
    expect(made.length).toBe(0);
    expect(renderer.showing).toBe('saved');
    const plain = make(new Set());
    await plain.renderer.renderModel({ trusted: true, data: { [DESIGN]: design }, metadata: {}, setData: () => undefined } as any);
    expect(plain.made.length).toBe(0);
    expect(plain.renderer.node.querySelector('.tslab-saved-note')).toBeNull();
    expect(plain.renderer.node.querySelector('.tslab-design')).not.toBeNull();
  });
});

describe('a saved plotly figure', () => {
  it('is drawn by the figure renderer it was given (plotly in JupyterLab) when the chart widget is gone', async () => {
    const drawn: any[] = [];
    const plotly = { safe: true, mimeTypes: ['application/vnd.plotly.v1+json'], createRenderer: () => Object.assign(new Widget(), { renderModel: async (m: any) => drawn.push(m.data['application/vnd.plotly.v1+json']) }) };
    const renderer = new LiveOrSaved({ mimeType: 'application/vnd.plotly.v1+json' } as any, () => null, plotly as any);
    const figure = { data: [{ type: 'scatter', x: [1], y: [2] }], layout: {} };
    await renderer.renderModel({ trusted: true, data: { [WIDGET_VIEW]: { model_id: 'gone' }, 'application/vnd.plotly.v1+json': figure }, metadata: {}, setData: () => undefined } as any);
    expect(drawn).toEqual([figure]);
    expect(renderer.showing).toBe('saved');
    expect(renderer.node.querySelector('.tslab-saved-note')!.textContent).toContain('saved widget output');
  });
});

describe('a widget whose kernel never answers', () => {
  it('shows the saved payload meanwhile, not "Loading widget..."', async () => {
    let resolve = () => {};
    const pending = Object.assign(new Widget(), {
      renderModel: () => {
        pending.node.textContent = 'Loading widget...';
        return new Promise<void>(r => (resolve = r));
      }
    });
    const renderer = new LiveOrSaved({ mimeType: DESIGN } as any, () => pending as any);
    await renderer.renderModel(studioOutput('waiting') as any);
    expect(renderer.showing).toBe('saved');
    expect(pending.isHidden).toBe(true);
    resolve();
  });
});
