/**
 * The view's side of the MCP Apps bridge (io.modelcontextprotocol/ui, protocol 2026-01-26), as
 * browser JavaScript: the part of ext-apps' App the views use, over the same postMessage JSON-RPC.
 * The package's own browser bundle (app-with-deps) carries the whole MCP client and zod, about
 * 530 KB a view: a host must load a view's whole document (its CSP reaches nothing), so each view
 * would cost that much. This is about 3 KB; test/e2e/mcp-apps-browser runs it against the SDK's
 * own host (AppBridge).
 *
 * Defines McpApps = { App, applyDocumentTheme, applyHostStyleVariables }, with the App methods the
 * views call: connect, getHostContext, callServerTool, openLink, and the handlers ontoolinput,
 * ontoolresult, onhostcontextchanged. It answers the host's ping and resource-teardown, and tells
 * the host its size as it changes (what App does by default).
 */
export const VIEW_BRIDGE_JS = `
const McpApps = (() => {
  const PROTOCOL = '2026-01-26';
  class App {
    constructor(info, capabilities) {
      this.info = info;
      this.capabilities = capabilities || {};
      this.next = 0;
      this.waiting = new Map();
      this.context = undefined;
    }
    send(message) { window.parent.postMessage({ jsonrpc: '2.0', ...message }, '*'); }
    request(method, params) {
      const id = ++this.next;
      return new Promise((resolve, reject) => {
        this.waiting.set(id, { resolve, reject });
        this.send({ id, method, params });
      });
    }
    receive(m) {
      if (!m || m.jsonrpc !== '2.0') return;
      if (m.method === undefined) {
        const w = this.waiting.get(m.id);
        if (!w) return;
        this.waiting.delete(m.id);
        if (m.error) w.reject(Object.assign(new Error(m.error.message), { code: m.error.code }));
        else w.resolve(m.result);
        return;
      }
      // The host's requests: a ping, and a teardown (nothing to save), each answered at once.
      if (m.id !== undefined) return this.send({ id: m.id, ...(m.method === 'ping' || m.method === 'ui/resource-teardown' ? { result: {} } : { error: { code: -32601, message: 'Method not found' } }) });
      const p = m.params || {};
      if (m.method === 'ui/notifications/tool-input' && this.ontoolinput) this.ontoolinput(p);
      else if (m.method === 'ui/notifications/tool-result' && this.ontoolresult) this.ontoolresult(p);
      else if (m.method === 'ui/notifications/host-context-changed') {
        this.context = { ...this.context, ...p };
        if (this.onhostcontextchanged) this.onhostcontextchanged(p);
      }
    }
    async connect() {
      window.addEventListener('message', (e) => { if (e.source === window.parent) this.receive(e.data); });
      const init = await this.request('ui/initialize', { appInfo: this.info, appCapabilities: this.capabilities, protocolVersion: PROTOCOL });
      this.context = init.hostContext;
      this.send({ method: 'ui/notifications/initialized', params: {} });
      this.resizing();
    }
    resizing() {
      let width = 0, height = 0, queued = false;
      const measure = () => {
        if (queued) return;
        queued = true;
        requestAnimationFrame(() => {
          queued = false;
          const el = document.documentElement, was = el.style.height;
          el.style.height = 'max-content';
          const h = Math.ceil(el.getBoundingClientRect().height);
          el.style.height = was;
          const w = Math.ceil(window.innerWidth);
          if (w === width && h === height) return;
          width = w; height = h;
          this.send({ method: 'ui/notifications/size-changed', params: { width: w, height: h } });
        });
      };
      measure();
      const observer = new ResizeObserver(measure);
      observer.observe(document.documentElement);
      observer.observe(document.body);
    }
    getHostContext() { return this.context; }
    callServerTool(params) { return this.request('tools/call', params); }
    openLink(params) { return this.request('ui/open-link', params); }
  }
  function applyDocumentTheme(theme) {
    document.documentElement.setAttribute('data-theme', theme);
    document.documentElement.style.colorScheme = theme;
  }
  function applyHostStyleVariables(vars) {
    for (const [k, v] of Object.entries(vars)) if (v !== undefined) document.documentElement.style.setProperty(k, v);
  }
  return { App, applyDocumentTheme, applyHostStyleVariables };
})();
`;
