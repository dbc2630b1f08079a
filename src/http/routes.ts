/**
 * The route table (docs/ui.md, "Routes"). Paths are relative to where the handler is mounted; a path
 * parameter is one URL-decoded, non-empty segment.
 */
export const ROUTES = [
  { name: 'start', method: 'POST', path: '/agents/:agent/runs' },
  { name: 'events', method: 'GET', path: '/runs/:runId/events' },
  { name: 'cancel', method: 'POST', path: '/runs/:runId/cancel' },
  { name: 'stop', method: 'POST', path: '/runs/:runId/stop' },
  { name: 'steer', method: 'POST', path: '/runs/:runId/steering' },
  { name: 'withdraw', method: 'DELETE', path: '/runs/:runId/steering/:steeringId' },
  { name: 'decide', method: 'POST', path: '/runs/:runId/tool-calls/:callId/decision' },
  { name: 'cancelToolCall', method: 'POST', path: '/runs/:runId/tool-calls/:callId/cancel' },
] as const;

/** The name of a route of {@link ROUTES}. */
export type RouteName = (typeof ROUTES)[number]['name'];

/** What a request path matched: a route and its parameters, or only a path whose methods are `allow`. */
export type RouteMatch =
  | { readonly name: RouteName; readonly params: Readonly<Record<string, string>> }
  | { readonly allow: readonly string[] };

const compiled = ROUTES.map((route) => ({ ...route, segments: route.path.split('/').slice(1) }));

/** Matches a method and path; `undefined` when no route has this path. */
export function matchRoute(method: string, pathname: string): RouteMatch | undefined {
  const segments = pathname.split('/').slice(1);
  const allow: string[] = [];
  for (const route of compiled) {
    const params = matchPath(route.segments, segments);
    if (params === undefined) continue;
    if (route.method === method) return { name: route.name, params };
    allow.push(route.method);
  }
  return allow.length > 0 ? { allow } : undefined;
}

function matchPath(pattern: readonly string[], segments: readonly string[]): Record<string, string> | undefined {
  if (pattern.length !== segments.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    const s = segments[i]!;
    if (!p.startsWith(':')) {
      if (p !== s) return undefined;
      continue;
    }
    let value: string;
    try {
      value = decodeURIComponent(s);
    } catch {
      return undefined;
    }
    if (value === '') return undefined;
    params[p.slice(1)] = value;
  }
  return params;
}
