/** QuestionRelays for tests that put a call's questions to something other than an ask. */
import type { QuestionRelay } from '../../src/call/question-relay.js';
import type { ClientCapabilities } from '../../src/transports/mcp-messages.js';

/** Answers a call's legacy server requests with `ask`; a modern round is refused (these tests expect none). */
export function answering(ask: QuestionRelay['ask'], capabilities: ClientCapabilities = { elicitation: {} }): QuestionRelay {
  return { capabilities, ask, askRound: () => Promise.reject(new Error('this test answers no input_required round')) };
}

/** Declares `capabilities` for a call and answers nothing. */
export function declaring(capabilities: ClientCapabilities): QuestionRelay {
  return {
    capabilities,
    ask: (req) => Promise.reject({ code: -32601, message: `this test answers no ${req.method}` }),
    askRound: () => Promise.reject(new Error('this test answers no input_required round')),
  };
}
