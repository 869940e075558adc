/**
 * A typed client for the agentmem HTTP service. No runtime dependencies: it uses the global `fetch`
 * (Node 18+, Deno, Bun, browsers).
 *
 * The request and reply shapes come from the server's OpenAPI schema (`src/schema.ts` is generated
 * by openapi-typescript from `/docs/openapi.json`; a test regenerates it against the live server,
 * so a renamed server field fails the build).
 *
 * @example
 * const mem = new AgentMem("http://127.0.0.1:8420", { token: process.env.AGENTMEM_TOKEN });
 * await mem.remember({ content: "We're on port 4000 now", project: "shop", key: "api.port" });
 * const { hits } = await mem.recall({ query: "which port?", project: "shop" });
 */

import type { components } from "./schema.js";

type Schemas = components["schemas"];

export type NewMemory = Schemas["NewMemory"];
export type MemoryVersion = Schemas["MemoryVersion"];
export type RememberResult = Schemas["RememberResult"];
export type RecallRequest = Schemas["RecallRequest"];
export type RecallReply = Schemas["Recalled"];
export type Hit = Schemas["Hit"];
export type ContextRequest = Schemas["ContextRequest"];
export type Context = Schemas["Context"];
export type Observation = Schemas["Observation"];
export type ObserveReply = Schemas["ObserveReply"];
export type EndSessionRequest = Schemas["EndSessionRequest"];
export type EpisodeResult = Schemas["EpisodeResult"];
export type DeleteRequest = Schemas["DeleteRequest"];
export type DeleteReport = Schemas["DeleteReport"];
export type { components };

export interface Options {
  /** A bearer token of the service (`AGENTMEM_TOKENS`); omit it for an open loopback server. */
  token?: string;
  /** Milliseconds before a request is abandoned (default 30 000). */
  timeoutMs?: number;
  /** Another fetch (tests, proxies); the global one by default. */
  fetch?: typeof fetch;
}

/** The service answered with an error: its HTTP status, machine-readable code and message. */
export class AgentMemError extends Error {
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(`agentmem: ${status} ${code}: ${message}`);
    this.name = "AgentMemError";
    this.status = status;
    this.code = code;
  }
}

export class AgentMem {
  readonly url: string;
  readonly #token: string | undefined;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;

  constructor(url: string, options: Options = {}) {
    this.url = url.replace(/\/+$/, "");
    this.#token = options.token;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  /** Create, reinforce or supersede a memory. */
  remember(memory: NewMemory): Promise<RememberResult> {
    return this.#call("POST", "/v1/memories", memory);
  }

  /** The current memories that best answer a query (hybrid search, ranked by currentness). */
  recall(request: RecallRequest): Promise<RecallReply> {
    return this.#call("POST", "/v1/recall", request);
  }

  /** A prompt-ready block of memories within a token budget. */
  context(request: ContextRequest): Promise<Context> {
    return this.#call("POST", "/v1/context", request);
  }

  /** One version by id, whatever its status. */
  get(memoryId: number): Promise<MemoryVersion> {
    return this.#call("GET", `/v1/memories/${memoryId}`);
  }

  /** Every version of the memory's lineage, oldest first, with why each one was replaced. */
  history(memoryId: number): Promise<MemoryVersion[]> {
    return this.#call("GET", `/v1/memories/${memoryId}/history`);
  }

  /** Log raw observations (tool calls, messages) in one all-or-nothing batch. */
  observe(observations: Observation[]): Promise<ObserveReply> {
    return this.#call("POST", "/v1/observations", { observations });
  }

  /** End a session: its observations become one episodic memory. */
  endSession(session: string, request: EndSessionRequest = {}): Promise<EpisodeResult> {
    return this.#call("POST", `/v1/sessions/${encodeURIComponent(session)}/end`, request);
  }

  /** The governance delete (an admin token): erase versions by ids, lineages or a filter. */
  delete(request: DeleteRequest): Promise<DeleteReport> {
    return this.#call("POST", "/v1/delete", request);
  }

  /** Whether the service answers its liveness check. */
  async health(): Promise<boolean> {
    try {
      const reply = await this.#fetch(`${this.url}/health`, { signal: AbortSignal.timeout(this.#timeoutMs) });
      return reply.ok;
    } catch {
      return false;
    }
  }

  async #call<T>(method: "GET" | "POST", path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    const reply = await this.#fetch(`${this.url}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(this.#timeoutMs),
    });
    const text = await reply.text();
    if (!reply.ok) {
      // every error of the service is {"error": {"code", "message"}}; a proxy's may be anything
      let error: { code?: string; message?: string } = {};
      try {
        error = (JSON.parse(text) as { error?: typeof error }).error ?? {};
      } catch {
        // not JSON: keep the status text
      }
      throw new AgentMemError(reply.status, error.code ?? "http_error", error.message ?? reply.statusText);
    }
    return JSON.parse(text) as T;
  }
}
