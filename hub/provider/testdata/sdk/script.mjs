// The official provider SDKs as test oracles for hub/provider
// (TestOfficialSDKs in sdk_test.go). Usage: node script.mjs cases.json
//
// cases.json is an array of cases {id, sdk, op, now, ...}; the script runs
// each with the SDK named, at the fixed unix time now (Date is replaced
// while a case runs), and prints one JSON array of results
// {id, ok, error?, signature?, problems?} on stdout. A case that throws is
// a result with ok false and the error's message, never a crash.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";

import * as octokit from "@octokit/webhooks-methods";
import { Webhook as SvixWebhook } from "svix";

const require = createRequire(import.meta.url);
const standardwebhooks = require("standardwebhooks");
const twilio = require("twilio");
const { Paddle } = require("@paddle/paddle-node-sdk");
const Stripe = require("stripe");

const RealDate = Date;

// atNow runs fn with Date reporting the unix time sec: the SDKs read the
// clock themselves, and the cases are signed at a fixed time.
async function atNow(sec, fn) {
  const ms = sec * 1000;
  class FixedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(ms);
      else super(...args);
    }
    static now() {
      return ms;
    }
  }
  globalThis.Date = FixedDate;
  try {
    return await fn();
  } finally {
    globalThis.Date = RealDate;
  }
}

// formParams decodes a form body the way Express (and Twilio's own
// examples) hand it to validateRequest: a repeated name becomes an array.
function formParams(body) {
  const params = {};
  for (const [k, v] of new URLSearchParams(body)) {
    if (!(k in params)) params[k] = v;
    else if (Array.isArray(params[k])) params[k].push(v);
    else params[k] = [params[k], v];
  }
  return params;
}

const camel = (s) => s.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());

// shapeProblems compares a JSON document with the object an SDK built from
// it: every field of the JSON must be one the SDK reads (under its
// camelCase name, or its own for free-form objects such as custom_data),
// and every field the SDK reads must be in the JSON (null when empty, as
// Paddle sends it), not left to the SDK's default.
function shapeProblems(json, sdk, path, out) {
  if (Array.isArray(json)) {
    if (!Array.isArray(sdk)) {
      out.push(`${path}: an array the SDK does not read as one`);
      return out;
    }
    json.forEach((v, i) => shapeProblems(v, sdk[i], `${path}[${i}]`, out));
    return out;
  }
  if (json === null || typeof json !== "object") return out;
  if (sdk === null || typeof sdk !== "object") {
    out.push(`${path}: an object the SDK does not read as one`);
    return out;
  }
  for (const k of Object.keys(json)) {
    const c = camel(k);
    if (c in sdk) shapeProblems(json[k], sdk[c], `${path}.${k}`, out);
    else if (k in sdk) shapeProblems(json[k], sdk[k], `${path}.${k}`, out);
    else out.push(`${path}.${k}: not a field of the SDK's ${sdk.constructor?.name ?? "object"}`);
  }
  for (const k of Object.keys(sdk)) {
    const snake = k.replace(/[A-Z]/g, (c) => "_" + c.toLowerCase());
    if (!(snake in json) && !(k in json)) out.push(`${path}: has no ${snake}, which the SDK reads`);
  }
  return out;
}

const ops = {
  "standardwebhooks.verify": (c) => {
    new standardwebhooks.Webhook(c.secret).verify(c.body, c.headers);
    return {};
  },
  "standardwebhooks.sign": (c) => ({
    signature: new standardwebhooks.Webhook(c.secret).sign(c.msgId, new Date(c.timestamp * 1000), c.body),
  }),
  "svix.verify": (c) => {
    new SvixWebhook(c.secret).verify(c.body, c.headers);
    return {};
  },
  "svix.sign": (c) => ({ signature: new SvixWebhook(c.secret).sign(c.msgId, new Date(c.timestamp * 1000), c.body) }),
  "twilio.verify": (c) => {
    const sig = c.headers["x-twilio-signature"];
    const alg = twilio.getSignatureAlgorithm ? twilio.getSignatureAlgorithm(c.headers["x-twilio-webhooks-signature-settings"]) : undefined;
    const ok = c.json
      ? twilio.validateRequestWithBody(c.secret, sig, c.url, c.body, alg)
      : twilio.validateRequest(c.secret, sig, c.url, formParams(c.body), alg);
    if (!ok) throw new Error("validateRequest: false");
    return {};
  },
  "twilio.sign": (c) => ({
    signature: twilio.getExpectedTwilioSignature(c.secret, c.url, c.json ? null : formParams(c.body), c.algorithm || undefined),
  }),
  "paddle.parse": async (c) => {
    // The client sets up the SDK's crypto; it makes no request here.
    const ev = await new Paddle("pdl_sdbx_apikey_unused").webhooks.unmarshal(c.body, c.secret, c.headers["paddle-signature"]);
    const json = JSON.parse(c.body);
    const problems = [];
    if (ev.eventType !== json.event_type) problems.push(`event type ${json.event_type} parsed as ${ev.eventType}`);
    if (/Generic/.test(ev.constructor.name)) problems.push(`${json.event_type}: an event type the SDK does not know`);
    shapeProblems(json, ev, "$", problems);
    return { problems };
  },
  "stripe.verify": (c) => {
    const stripe = new Stripe("sk_test_unused");
    stripe.webhooks.constructEvent(c.body, c.headers["stripe-signature"], c.secret, 300);
    return {};
  },
  "stripe.sign": (c) => {
    const stripe = new Stripe("sk_test_unused");
    return { signature: stripe.webhooks.generateTestHeaderString({ payload: c.body, secret: c.secret, timestamp: c.timestamp }) };
  },
  "octokit.verify": async (c) => {
    if (!(await octokit.verify(c.secret, c.body, c.headers["x-hub-signature-256"]))) throw new Error("verify: false");
    return {};
  },
  "octokit.sign": async (c) => ({ signature: await octokit.sign(c.secret, c.body) }),
};

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const results = [];
for (const c of cases) {
  const op = ops[`${c.sdk}.${c.op}`];
  try {
    if (!op) throw new Error(`no operation ${c.sdk}.${c.op}`);
    const r = await atNow(c.now, () => op(c));
    results.push({ id: c.id, ok: true, ...r });
  } catch (e) {
    results.push({ id: c.id, ok: false, error: String(e?.message ?? e) });
  }
}
process.stdout.write(JSON.stringify(results) + "\n");
