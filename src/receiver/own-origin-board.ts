import type { AppViewRoute } from '@bull-board/api/typings/app';
import { ExpressAdapter } from '@bull-board/express';
import { contentSecurityPolicy } from 'helmet';

/*
 * bull-board with nothing from another origin: the dashboard's page (admin-dashboard.ts) and
 * the policy that keeps it so.
 */

/**
 * A `<link>` to another origin. bull-board's page (@bull-board/ui 9.10, dist/index.ejs) links a
 * Google Fonts stylesheet for IBM Plex: a request to a third party from every operator who opens
 * the board, and, where egress is closed, a render-blocking stylesheet that hangs the page. Its
 * stylesheet's font stacks fall back to the system's fonts (system-ui, ui-monospace).
 */
const OUTSIDE_LINK = /<link\b[^>]*\bhref="(?:[a-z][a-z\d+.-]*:)?\/\/[^"]*"[^>]*>\s*/gi;

/**
 * bull-board's Express adapter, whose page leaves out links to other origins. bull-board has
 * no option for its template's font link (its `uiBasePath` swaps the whole UI folder, and a
 * copied template would name the hashed script files of one release), so the entry route
 * renders the package's own template and drops the link; the rest is bull-board's route as is.
 */
export class OwnOriginAdapter extends ExpressAdapter {
  override setEntryRoute(route: AppViewRoute): ExpressAdapter {
    this.app[route.method](route.route, (_req, res, next) => {
      const { name, params } = route.handler({ basePath: this.basePath, uiConfig: this.uiConfig });
      res.render(name, params, (error: Error | null, html: string) => {
        if (error !== null) {
          next(error);
          return;
        }
        res.send(html.replace(OUTSIDE_LINK, ''));
      });
    });
    return this;
  }
}

/**
 * The dashboard's Content-Security-Policy, in place of helmet's default the app sets: that one
 * lets styles and fonts come from any https: host, which is how bull-board's font link got through.
 * Here nothing may come from elsewhere, so a link a later bull-board adds is refused, not
 * fetched. Inline styles stay allowed: the template and React set them, and what a style loads
 * (fonts, images) still falls under default-src. No upgrade-insecure-requests (helmet's default
 * has it): on a plain-HTTP INTERNAL_PORT reached by name, Chromium then asked for the page's own
 * scripts over https, where nothing answers, and the board stayed blank.
 */
export const OWN_ORIGIN_POLICY = contentSecurityPolicy({
  useDefaults: false,
  directives: {
    defaultSrc: ["'self'"],
    baseUri: ["'self'"],
    styleSrc: ["'self'", "'unsafe-inline'"],
    objectSrc: ["'none'"],
    scriptSrcAttr: ["'none'"],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
  },
});
