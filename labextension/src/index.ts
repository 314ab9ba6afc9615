/** tslab's JupyterLab extension: the plugin (launcher, commands) and the mime renderers. */
export { default as plugin } from './plugin';
export { default as mimeExtensions } from './mime';
