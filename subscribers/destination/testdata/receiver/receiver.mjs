// A receiver of hookhub destination deliveries, verifying each with the
// official npm packages standardwebhooks and svix (the test oracle of
// subscribers/destination, started by receivertest.Node). It is also the
// shape a Node or TypeScript team can copy: read the raw body, verify it
// with the headers as received, dedup on webhook-id, answer 2xx.
//
//   RECEIVER_SECRETS="whsec_... [whsec_...]" node receiver.mjs
//
// prints {"port":N} once listening on 127.0.0.1. Only the FIRST secret
// verifies: a rotation test gives it the old one of a [new, old] pair.
//
// Test endpoints (not signed):
//   POST /_control  {"fail_first":N,"fail_status":500,"status":200,"delay_ms":0,"gone":false}
//                   replaces the behaviour and restarts the per-id attempt counts
//   GET  /_received {"accepted":N,"received":[{id, timestamp, type, ...}]}
import http from "node:http";
import { createHash } from "node:crypto";
import { Webhook as StandardWebhook } from "standardwebhooks";
// svix 1.99.1 reads svix-id/-timestamp/-signature and, when one is absent,
// its webhook-* twin (node_modules/svix/dist/webhook.js), so the hub's
// webhook-* headers go to it unchanged.
import { Webhook as SvixWebhook } from "svix";

const MAX_BODY = 1 << 20; // 1 MiB
const MAX_RECORDS = 10000;

const secret = (process.env.RECEIVER_SECRETS ?? "").split(" ").filter(Boolean)[0];
if (!secret) {
  console.error("RECEIVER_SECRETS holds no secret");
  process.exit(2);
}
const verifiers = { std: new StandardWebhook(secret), svix: new SvixWebhook(secret) };

const defaults = { fail_first: 0, fail_status: 500, status: 200, delay_ms: 0, gone: false };
let control = { ...defaults };
const attempts = new Map(); // webhook-id -> verified attempts seen
const accepted = new Set(); // webhook-ids answered 2xx
const received = [];

// verified reports whether wh accepts the delivery. Both libraries
// JSON.parse the body once the signature matched; a SyntaxError therefore
// means "signed, but not JSON" (a raw payload destination of a form-encoded
// provider such as Twilio), which is still a verified delivery.
function verified(wh, body, headers) {
  try {
    wh.verify(body, headers);
    return true;
  } catch (err) {
    return err instanceof SyntaxError;
  }
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on("data", (c) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(Object.assign(new Error("body over 1 MiB"), { status: 413 }));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function send(res, status, value) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(value ?? {}));
}

async function deliver(req, res, body) {
  const id = req.headers["webhook-id"] ?? "";
  const rec = {
    id,
    timestamp: req.headers["webhook-timestamp"] ?? "",
    type: "",
    verified_std: verified(verifiers.std, body, req.headers),
    verified_svix: verified(verifiers.svix, body, req.headers),
    status_sent: 0,
    duplicate: false,
    headers: Object.fromEntries(Object.entries(req.headers).filter(([k]) => k.startsWith("hookhub-"))),
    body_sha256: createHash("sha256").update(body).digest("hex"),
  };
  try {
    const type = JSON.parse(body.toString("utf8")).type;
    if (typeof type === "string") rec.type = type;
  } catch {}
  if (received.length < MAX_RECORDS) received.push(rec);

  let status;
  if (!rec.verified_std || !rec.verified_svix) {
    status = 401;
  } else {
    const n = (attempts.get(id) ?? 0) + 1;
    attempts.set(id, n);
    if (n <= control.fail_first) status = control.fail_status;
    else if (control.gone) status = 410;
    else status = control.status;
    if (status >= 200 && status < 300) {
      // At-least-once: a redelivered id is answered 200 and not processed again.
      if (accepted.has(id)) {
        rec.duplicate = true;
        status = 200;
      }
      accepted.add(id);
    }
  }
  rec.status_sent = status;
  if (control.delay_ms > 0) await new Promise((r) => setTimeout(r, control.delay_ms));
  send(res, status, { ok: status < 300 });
}

const server = http.createServer(async (req, res) => {
  try {
    const body = await readBody(req);
    if (req.method === "GET" && req.url === "/_received") {
      return send(res, 200, { accepted: accepted.size, received });
    }
    if (req.method === "POST" && req.url === "/_control") {
      control = { ...defaults, ...JSON.parse(body.toString("utf8")) };
      attempts.clear();
      return send(res, 200, control);
    }
    if (req.method !== "POST") return send(res, 405, { error: "POST only" });
    await deliver(req, res, body);
  } catch (err) {
    if (!res.headersSent) send(res, err.status ?? 400, { error: String(err.message ?? err) });
  }
});

server.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ port: server.address().port }));
});
