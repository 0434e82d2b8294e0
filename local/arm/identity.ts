/**
 * Microsoft Entra ID as MSAL node calls it with `authorityHost: origin` and
 * `disableInstanceDiscovery: true`: `GET /{tenant}/v2.0/.well-known/openid-configuration`, then
 * `POST /{tenant}/oauth2/v2.0/token?client-request-id=...` (client credentials, form-encoded).
 * `GET /common/discovery/instance` is served too (only made without `disableInstanceDiscovery`).
 * Issued tokens are remembered, so ARM accepts only those (`authorize`) until they are revoked.
 */
import { base64url } from "../../supabase/functions/_shared/base64.ts";
import { bearerCredential } from "../../supabase/functions/_shared/bearer.ts";
import { armError, json } from "./responses.ts";

export interface IdentityOptions {
  tenantId: string;
  clientId: string;
  clientSecret: string;
}

export interface Identity {
  openidConfiguration(tenant: string): Response;
  instanceDiscovery(): Response;
  token(tenant: string, form: URLSearchParams): Response;
  /** ARM's check of the bearer token: undefined when it may pass, else ARM's 401. */
  authorize(req: Request): Response | undefined;
  /** Every issued token becomes invalid. */
  revoke(): void;
  readonly tokensIssued: number;
}

const ARM_AUDIENCES = new Set([
  "https://management.azure.com",
  "https://management.core.windows.net",
]);

const TOKEN_SECONDS = 3599;

export function createIdentity(origin: string, options: IdentityOptions): Identity {
  /** token → audience, expiry */
  const tokens = new Map<string, { audience: string; expiresAt: number }>();
  let tokensIssued = 0;

  function aadError(status: number, error: string, code: number, description: string) {
    const traceId = crypto.randomUUID();
    const correlationId = crypto.randomUUID();
    const timestamp = new Date().toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
    return json(status, {
      error,
      error_description:
        `AADSTS${code}: ${description} Trace ID: ${traceId} Correlation ID: ${correlationId} Timestamp: ${timestamp}`,
      error_codes: [code],
      timestamp,
      trace_id: traceId,
      correlation_id: correlationId,
      error_uri: `${origin}/error?code=${code}`,
    });
  }

  const tenantNotFound = (error: string, tenant: string) =>
    aadError(
      400,
      error,
      90002,
      `Tenant '${tenant}' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.`,
    );

  /** Shaped like Entra's v1 app-only tokens; the signature is random, only issuance counts. */
  function issueToken(audience: string, scope: string) {
    const now = Math.floor(Date.now() / 1000);
    const header = base64url(JSON.stringify({ typ: "JWT", alg: "RS256", kid: "test-arm-server" }));
    const payload = base64url(JSON.stringify({
      aud: audience,
      iss: `https://sts.windows.net/${options.tenantId}/`,
      iat: now,
      nbf: now,
      exp: now + TOKEN_SECONDS,
      appid: options.clientId,
      appidacr: "1",
      idp: `https://sts.windows.net/${options.tenantId}/`,
      oid: options.clientId,
      sub: options.clientId,
      tid: options.tenantId,
      ver: "1.0",
      scp: scope,
    }));
    const signature = base64url(crypto.getRandomValues(new Uint8Array(32)));
    const token = `${header}.${payload}.${signature}`;
    tokens.set(token, { audience, expiresAt: Date.now() + TOKEN_SECONDS * 1000 });
    tokensIssued++;
    return token;
  }

  return {
    openidConfiguration(tenant) {
      if (tenant !== options.tenantId) return tenantNotFound("invalid_tenant", tenant);
      return json(200, openidConfiguration(origin, tenant));
    },
    instanceDiscovery() {
      const host = new URL(origin).host;
      return json(200, {
        tenant_discovery_endpoint:
          `${origin}/${options.tenantId}/v2.0/.well-known/openid-configuration`,
        "api-version": "1.1",
        metadata: [{ preferred_network: host, preferred_cache: host, aliases: [host] }],
      });
    },
    token(tenant, form) {
      if (tenant !== options.tenantId) return tenantNotFound("invalid_request", tenant);
      const grantType = form.get("grant_type");
      if (grantType !== "client_credentials") {
        return aadError(
          400,
          "unsupported_grant_type",
          70003,
          `The app requested an unsupported grant type '${grantType ?? ""}'.`,
        );
      }
      const clientId = form.get("client_id");
      if (clientId !== options.clientId) {
        return aadError(
          400,
          "unauthorized_client",
          700016,
          `Application with identifier '${
            clientId ?? ""
          }' was not found in the directory '${tenant}'. This can happen if the application has not been installed by the administrator of the tenant or consented to by any user in the tenant. You may have sent your authentication request to the wrong tenant.`,
        );
      }
      if (form.get("client_secret") !== options.clientSecret) {
        return aadError(
          401,
          "invalid_client",
          7000215,
          `Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '${options.clientId}'.`,
        );
      }
      const scope = (form.get("scope") ?? "").split(" ").find((s) => s.endsWith("/.default"));
      if (!scope) {
        return aadError(
          400,
          "invalid_scope",
          1002012,
          `The provided value for scope ${
            form.get("scope") ?? ""
          } is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI).`,
        );
      }
      const audience = scope.slice(0, -"/.default".length).replace(/\/+$/, "");
      return json(200, {
        token_type: "Bearer",
        expires_in: TOKEN_SECONDS,
        ext_expires_in: TOKEN_SECONDS,
        access_token: issueToken(audience, scope),
      });
    },
    authorize(req) {
      const header = req.headers.get("authorization");
      if (!header) {
        return unauthorized(
          "AuthenticationFailed",
          "Authentication failed. The 'Authorization' header is missing.",
        );
      }
      const presented = bearerCredential(header);
      const token = presented === undefined ? undefined : tokens.get(presented);
      if (!token) {
        return unauthorized(
          "AuthenticationFailed",
          "Authentication failed. The access token is invalid or was not issued by this server.",
        );
      }
      if (token.expiresAt <= Date.now()) {
        return unauthorized(
          "ExpiredAuthenticationToken",
          "The access token expiry UTC time is earlier than current UTC time.",
        );
      }
      if (!ARM_AUDIENCES.has(token.audience)) {
        return unauthorized(
          "InvalidAuthenticationTokenAudience",
          `The access token has been obtained for wrong audience or resource '${token.audience}'. It should exactly match with one of the allowed audiences 'https://management.core.windows.net/','https://management.core.windows.net','https://management.azure.com/','https://management.azure.com'.`,
        );
      }
      return undefined;
    },
    revoke() {
      tokens.clear();
    },
    get tokensIssued() {
      return tokensIssued;
    },
  };
}

const unauthorized = (code: string, message: string) => json(401, armError(code, message));

/** Entra's discovery document for a tenant, with every endpoint on this origin. */
function openidConfiguration(origin: string, tenant: string) {
  const t = `${origin}/${tenant}`;
  return {
    token_endpoint: `${t}/oauth2/v2.0/token`,
    token_endpoint_auth_methods_supported: [
      "client_secret_post",
      "private_key_jwt",
      "client_secret_basic",
    ],
    jwks_uri: `${origin}/${tenant}/discovery/v2.0/keys`,
    response_modes_supported: ["query", "fragment", "form_post"],
    subject_types_supported: ["pairwise"],
    id_token_signing_alg_values_supported: ["RS256"],
    response_types_supported: ["code", "id_token", "code id_token", "id_token token"],
    scopes_supported: ["openid", "profile", "email", "offline_access"],
    issuer: `${origin}/${tenant}/v2.0`,
    request_uri_parameter_supported: false,
    userinfo_endpoint: `${origin}/oidc/userinfo`,
    authorization_endpoint: `${t}/oauth2/v2.0/authorize`,
    device_authorization_endpoint: `${t}/oauth2/v2.0/devicecode`,
    http_logout_supported: true,
    frontchannel_logout_supported: true,
    end_session_endpoint: `${t}/oauth2/v2.0/logout`,
    claims_supported: [
      "sub",
      "iss",
      "aud",
      "exp",
      "iat",
      "auth_time",
      "acr",
      "nonce",
      "tid",
      "ver",
    ],
    kerberos_endpoint: `${t}/kerberos`,
    tenant_region_scope: "EU",
    cloud_instance_name: "microsoftonline.com",
    cloud_graph_host_name: "graph.windows.net",
    msgraph_host: "graph.microsoft.com",
    rbac_url: "https://pas.windows.net",
  };
}
