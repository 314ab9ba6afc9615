/**
 * The JupyterLab plugin: a "tslab" launcher section (a new design notebook on a catalog kernel, the
 * tutorials), "Check with tslab..." on `.py` files in the file browser, "Open in a notebook" for designs, and
 * in every notebook the renderer that shows a tslab widget's saved output when its live model is gone.
 */

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Dialog, showDialog, showErrorMessage } from '@jupyterlab/apputils';
import { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import { ILauncher } from '@jupyterlab/launcher';
import { INotebookTracker } from '@jupyterlab/notebook';
import { Widget } from '@lumino/widgets';
import catalog from './catalog.json';
import { CheckBody } from './check_dialog';
import {
  type Cell,
  checkFileCells,
  defaultKernel,
  designNotebookCells,
  designNotebookStem,
  jitFunctions,
  notebookJSON,
  openDesignCells
} from './notebooks';
import { studioIcon, tutorialsIcon } from './icons';
import { markTslabNotebook } from './notebook_marks';
import { addLiveOrSaved } from './renderers/live';
import { OPEN_DESIGN_EVENT, OpenDesignDetail } from './views/design';

const CATEGORY = 'tslab';
export const CommandIDs = {
  newDesign: 'tslab:new-design-notebook',
  tutorials: 'tslab:open-tutorials',
  checkFile: 'tslab:check-file',
  openDesign: 'tslab:open-design-notebook'
};

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'tslab:plugin',
  description: 'tslab launcher section and commands.',
  autoStart: true,
  optional: [ILauncher, IDefaultFileBrowser, ILayoutRestorer, INotebookTracker],
  activate: (app: JupyterFrontEnd, launcher: ILauncher | null, browser: IDefaultFileBrowser | null, _restorer: ILayoutRestorer | null, notebooks: INotebookTracker | null) => {
    // tslab widgets' outputs: live while the kernel has their model, their saved payload otherwise
    notebooks?.widgetAdded.connect((_, panel) => {
      addLiveOrSaved(panel.content.rendermime);
      void markTslabNotebook(panel); // tslab's notebooks wrap printed output between words
    });
    const here = () => browser?.model.path ?? '';
    app.commands.addCommand(CommandIDs.newDesign, {
      label: 'New design notebook',
      caption: 'A notebook with a tslab Studio on a catalog kernel',
      icon: studioIcon,
      execute: async args => {
        const kernel = (args.kernel as string | undefined) ?? (await pick('New design notebook', 'kernel', catalog.map(k => [k.name, `${k.name}: ${k.summary}`]), defaultKernel(catalog.map(k => k.name))));
        if (kernel) {
          await createNotebook(app, here(), kernel, designNotebookCells(kernel), true); // run: the Studio is drawn at once
        }
      }
    });
    app.commands.addCommand(CommandIDs.tutorials, {
      label: 'Tutorials',
      caption: 'Open the tslab tutorials',
      icon: tutorialsIcon,
      execute: async () => {
        const contents = app.serviceManager.contents;
        for (const dir of ['notebooks', '']) {
          try {
            const listing = await contents.get(dir, { content: true });
            const tour = (listing.content as { name: string; path: string }[]).find(f => /^00_.*\.ipynb$/.test(f.name));
            if (tour) {
              await app.commands.execute('filebrowser:go-to-path', { path: dir || '/' });
              return app.commands.execute('docmanager:open', { path: tour.path });
            }
          } catch {
            // no such folder: try the next place
          }
        }
        return showErrorMessage('tslab tutorials', 'No tutorials here: start JupyterLab with `tslab lab` to open them.');
      }
    });
    app.commands.addCommand(CommandIDs.checkFile, {
      label: 'Check with tslab...',
      caption: 'Capture a host function of this kernel file and check it with TS',
      isVisible: () => !!selectedPython(browser),
      execute: async args => {
        const path = (args.path as string | undefined) ?? selectedPython(browser);
        if (path) {
          await checkFile(app, path);
        }
      }
    });
    app.commands.addCommand(CommandIDs.openDesign, {
      label: 'Open design in a notebook',
      execute: async args => {
        const file = (args.path as string | undefined) ?? null;
        const dir = file ? dirname(file) : here();
        const name = file ? basename(file).replace(/\.tslab\.json$/, '') : designNotebookStem(args.design);
        await createNotebook(app, dir, name, openDesignCells(file ? basename(file) : null, JSON.stringify(args.design ?? {})), false);
      }
    });
    app.contextMenu.addItem({ command: CommandIDs.checkFile, selector: '.jp-DirListing-item[data-file-type="python"]', rank: 20 });
    if (launcher) {
      launcher.add({ command: CommandIDs.newDesign, category: CATEGORY, rank: 1 });
      launcher.add({ command: CommandIDs.tutorials, category: CATEGORY, rank: 2 });
    }
    document.addEventListener(OPEN_DESIGN_EVENT, event => {
      const detail = (event as CustomEvent<OpenDesignDetail>).detail;
      const path = designFileOf(app, event.target as Node | null);
      void app.commands.execute(CommandIDs.openDesign, { path, design: detail.design as never });
    });
  }
};

function selectedPython(browser: IDefaultFileBrowser | null): string | null {
  const item = browser?.selectedItems().next();
  const model = item && !item.done ? item.value : null;
  return model && model.type === 'file' && model.name.endsWith('.py') ? model.path : null;
}

/** The path of the design file whose viewer holds `node`, or null for a design shown in a notebook. */
function designFileOf(app: JupyterFrontEnd, node: Node | null): string | null {
  for (const widget of app.shell.widgets('main')) {
    const context = (widget as { context?: { path: string } }).context;
    if (context && node && widget.node.contains(node) && context.path.endsWith('.tslab.json')) {
      return context.path;
    }
  }
  return null;
}

async function checkFile(app: JupyterFrontEnd, path: string): Promise<void> {
  const file = await app.serviceManager.contents.get(path, { content: true, format: 'text' });
  const functions = jitFunctions(String(file.content));
  if (!functions.length) {
    await showErrorMessage('Check with tslab', `${basename(path)} defines no @cute.jit function to capture.`);
    return;
  }
  const body = new CheckBody(functions);
  const result = await showDialog({ title: `Check ${basename(path)} with tslab`, body, buttons: [Dialog.cancelButton(), Dialog.okButton({ label: 'Check' })] });
  if (!result.button.accept || !result.value) {
    return;
  }
  const stem = basename(path).replace(/\.py$/, '');
  await createNotebook(app, dirname(path), `check_${stem}`, checkFileCells(basename(path), result.value.fn, result.value.args), true);
}

async function pick(title: string, what: string, options: [string, string][], first?: string): Promise<string | null> {
  const body = new Widget();
  const select = document.createElement('select');
  select.setAttribute('aria-label', what);
  for (const [value, text] of options) {
    select.add(new Option(text, value));
  }
  if (first !== undefined) {
    select.value = first;
  }
  body.node.append(select);
  const result = await showDialog({ title, body, buttons: [Dialog.cancelButton(), Dialog.okButton({ label: 'Create' })] });
  return result.button.accept ? select.value : null;
}

/** Write a notebook of `cells` as `dir/<stem>.ipynb` (or `<stem>-1.ipynb`, ... when taken), open it, and (with
 * `run`) run it once its kernel is ready. */
async function createNotebook(app: JupyterFrontEnd, dir: string, stem: string, cells: Cell[], run: boolean): Promise<void> {
  const contents = app.serviceManager.contents;
  const path = await freePath(app, dir, stem, '.ipynb');
  await contents.save(path, { type: 'notebook', format: 'json', content: notebookJSON(cells) });
  const panel = (await app.commands.execute('docmanager:open', { path, factory: 'Notebook' })) as {
    sessionContext?: { ready: Promise<void> };
    context?: { ready: Promise<void> };
  };
  if (run) {
    await panel.context?.ready;
    await panel.sessionContext?.ready;
    await app.commands.execute('notebook:run-all-cells');
  }
}

/** `dir/<stem><ext>`, or `<stem>-1<ext>`, ... when that name is taken (one listing of `dir`, no 404s). */
async function freePath(app: JupyterFrontEnd, dir: string, stem: string, ext: string): Promise<string> {
  const listing = await app.serviceManager.contents.get(dir, { content: true });
  const taken = new Set((listing.content as { name: string }[]).map(f => f.name));
  let i = 0;
  while (taken.has(`${stem}${i ? '-' + i : ''}${ext}`)) {
    i++;
  }
  return `${dir ? dir + '/' : ''}${stem}${i ? '-' + i : ''}${ext}`;
}

function basename(path: string): string {
  return path.split('/').pop() ?? path;
}

function dirname(path: string): string {
  return path.split('/').slice(0, -1).join('/');
}

export default plugin;
