/**
 * A throw-away certificate authority and a server certificate for `127.0.0.1` and `localhost`,
 * made at test time with the `openssl` CLI in a temporary directory (ECDSA P-256, valid 2 days).
 *
 * - `caCert` / `caCertPath`: the CA certificate (PEM). Trust it in this process with
 *   `Deno.createHttpClient({ caCerts: [caCert] })`, in a child `deno` process with the env
 *   `DENO_CERT=<caCertPath>` (or `--cert <caCertPath>`).
 * - `cert` / `key`: the server certificate (leaf only, signed by the CA; subjectAltName
 *   IP:127.0.0.1, DNS:localhost) and its PKCS#8 key, for `Deno.serve({ cert, key })`.
 *
 * Disposing removes the directory (the CA key never leaves it).
 */
export interface TestTls extends AsyncDisposable {
  /** The temporary directory holding ca.pem, ca.key, server.pem, server.key. */
  dir: string;
  /** Path of the CA certificate (PEM). */
  caCertPath: string;
  /** The CA certificate (PEM). */
  caCert: string;
  /** The server certificate (PEM). */
  cert: string;
  /** The server private key (PEM, PKCS#8). */
  key: string;
}

const OPENSSL = "/usr/bin/openssl";

async function openssl(dir: string, args: string[]): Promise<void> {
  const { code, stderr } = await new Deno.Command(OPENSSL, {
    args,
    cwd: dir,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
    // No config file surprises from the environment.
    env: { OPENSSL_CONF: "/dev/null" },
  }).output();
  if (code !== 0) {
    throw new Error(
      `openssl ${args.join(" ")} failed (${code}): ${new TextDecoder().decode(stderr)}`,
    );
  }
}

export async function createTestTls(): Promise<TestTls> {
  const dir = await Deno.makeTempDir({ prefix: "vm-service-tls-" });
  try {
    const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    // The CA: self-signed, v3, basicConstraints CA:TRUE.
    await openssl(dir, [
      "req",
      "-x509",
      ...ec,
      "-keyout",
      "ca.key",
      "-out",
      "ca.pem",
      "-days",
      "2",
      "-subj",
      "/CN=vm-service test CA",
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,keyCertSign,cRLSign",
      "-addext",
      "subjectKeyIdentifier=hash",
    ]);
    // The server key and its signing request.
    await openssl(dir, [
      "req",
      "-new",
      ...ec,
      "-keyout",
      "server.key",
      "-out",
      "server.csr",
      "-subj",
      "/CN=127.0.0.1",
    ]);
    await Deno.writeTextFile(
      `${dir}/server.ext`,
      [
        "basicConstraints=critical,CA:FALSE",
        "keyUsage=critical,digitalSignature,keyEncipherment",
        "extendedKeyUsage=serverAuth",
        "subjectAltName=IP:127.0.0.1,DNS:localhost",
        "subjectKeyIdentifier=hash",
        "authorityKeyIdentifier=keyid",
        "",
      ].join("\n"),
    );
    await openssl(dir, [
      "x509",
      "-req",
      "-in",
      "server.csr",
      "-CA",
      "ca.pem",
      "-CAkey",
      "ca.key",
      "-set_serial",
      `0x${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`,
      "-days",
      "2",
      "-sha256",
      "-extfile",
      "server.ext",
      "-out",
      "server.pem",
    ]);
    const caCertPath = `${dir}/ca.pem`;
    const [caCert, cert, key] = await Promise.all([
      Deno.readTextFile(caCertPath),
      Deno.readTextFile(`${dir}/server.pem`),
      Deno.readTextFile(`${dir}/server.key`),
    ]);
    let disposed = false;
    return {
      dir,
      caCertPath,
      caCert,
      cert,
      key,
      async [Symbol.asyncDispose]() {
        if (disposed) return;
        disposed = true;
        await Deno.remove(dir, { recursive: true }).catch(() => {});
      },
    };
  } catch (error) {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw error;
  }
}
