/**
 * tslab's notebooks (the tutorials and the notebooks this extension writes carry `metadata.tslab`) get the class
 * `tslab-notebook`, under which printed output wraps between words (`style/index.css`): JupyterLab breaks a long
 * printed line anywhere, even mid-word ("runnab|le"), and tslab prints traces, verdicts and errors a 1000 px window
 * cannot hold on one line. Other notebooks keep JupyterLab's own wrapping.
 */

import { TSLAB_NOTEBOOK_KEY } from './notebooks';

export const TSLAB_NOTEBOOK_CLASS = 'tslab-notebook';

/** What marking needs of a notebook panel (JupyterLab's `NotebookPanel`). */
export interface MarkablePanel {
  readonly context: { ready: Promise<void> };
  readonly model: { getMetadata(key: string): unknown; metadataChanged: { connect(fn: () => void): unknown } } | null;
  toggleClass(name: string, force?: boolean): void;
}

/** Mark `panel` as tslab's while its notebook's metadata says so (checked when it loads and when it changes). */
export async function markTslabNotebook(panel: MarkablePanel): Promise<void> {
  await panel.context.ready;
  const model = panel.model;
  if (!model) {
    return;
  }
  const update = () => panel.toggleClass(TSLAB_NOTEBOOK_CLASS, model.getMetadata(TSLAB_NOTEBOOK_KEY) !== undefined);
  update();
  model.metadataChanged.connect(update);
}
