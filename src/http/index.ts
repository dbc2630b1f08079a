/**
 * loopctl/http: runs over HTTP, AG-UI events over SSE (docs/ui.md). Node only; needs the optional peer
 * dependencies `@ag-ui/core` and `@ag-ui/encoder`.
 */
export { createHandler, DISCONNECTED_REASON, type HandlerOptions, type NodeHandler } from './handler.js';
export { ROUTES, type RouteName } from './routes.js';
export { HttpError } from './http-error.js';
