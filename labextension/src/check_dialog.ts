/**
 * The body of the "Check with tslab..." dialog (`plugin.ts` shows it): the kernel file's host functions, the
 * chosen one's signature and docstring, and the arguments to trace it with, guessed from the signature
 * (`notebooks.ts`) and editable.
 */

import type { Dialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';
import type { HostFunction } from './notebooks';

/** The dialog body of "Check with tslab...": the host function (its signature and what its docstring says), and
 * the arguments to trace it with, guessed from the signature and editable. */
export class CheckBody extends Widget implements Dialog.IBodyWidget<{ fn: string; args: string }> {
  constructor(functions: HostFunction[]) {
    super();
    this.addClass('tslab-check-dialog');
    this.select = document.createElement('select');
    this.select.setAttribute('aria-label', 'host function');
    for (const f of functions) {
      this.select.add(new Option(f.name, f.name));
    }
    this.signature = document.createElement('code');
    this.signature.className = 'tslab-check-signature';
    this.doc = document.createElement('div');
    this.doc.className = 'tslab-check-doc';
    this.args = document.createElement('input');
    this.args.setAttribute('aria-label', 'arguments');
    const show = (f: HostFunction | undefined) => {
      this.signature.textContent = f ? `def ${f.signature}` : '';
      this.doc.textContent = f?.doc ?? '';
      this.args.value = f?.args ?? '';
    };
    show(functions[0]);
    this.select.addEventListener('change', () => show(functions.find(f => f.name === this.select.value)));
    const label = (text: string, el: HTMLElement) => {
      const l = document.createElement('label');
      l.append(text, el);
      return l;
    };
    const hint = document.createElement('div');
    hint.className = 'tslab-check-hint';
    hint.textContent =
      'Python, one value per parameter without a default: fake.tensor(dtype, shape) for a tensor (shapes big enough ' +
      'for the kernel\u2019s tiles), numbers for the rest. tslab traces the kernel on the CPU with them; nothing runs on a GPU.';
    this.node.append(label('host function (@cute.jit) ', this.select), this.signature, this.doc, label('arguments ', this.args), hint);
  }

  getValue(): { fn: string; args: string } {
    return { fn: this.select.value, args: this.args.value };
  }

  private select: HTMLSelectElement;
  private signature: HTMLElement;
  private doc: HTMLElement;
  private args: HTMLInputElement;
}
