/**
 * Every error code the API can answer with: its HTTP status and default message and hint.
 * Codes are public API: never change the meaning of one, only add.
 */
export const ERROR_CATALOG = {
  unauthorized: {
    status: 401,
    message: 'Missing, invalid or expired credential.',
    hint: 'Send "Authorization: Bearer <token>" with a workspace API token (fw_...) or an OAuth access token.',
  },
  insufficient_scope: {
    status: 403,
    message: 'The credential lacks the scope this tool needs.',
    hint: 'Use a credential granted the scope named in the WWW-Authenticate header.',
  },
  pro_required: {
    status: 403,
    message: 'This tool changes data and needs a Pro workspace.',
    hint: 'Upgrade the workspace to Pro, or use the read tools, which work on every plan.',
  },
  forbidden: {
    status: 403,
    message: 'Your role in this workspace does not allow this action.',
    hint: 'Ask a workspace owner or admin for a role that allows it, or for a token with that role.',
  },
  invalid_arguments: {
    status: 400,
    message: 'The request does not match what the tool expects.',
    hint: "Fix the fields listed in details; GET /api/v1/tools shows each tool's input schema.",
  },
  tool_error: {
    status: 400,
    message: 'The tool refused the request.',
    hint: 'Read the message, change the request and try again.',
  },
  idempotency_key_reused: {
    status: 422,
    message: 'This Idempotency-Key was already used with a different request body.',
    hint: 'Use a new Idempotency-Key for a different request; reuse a key only to retry the same request.',
  },
  file_refused: {
    status: 422,
    message: 'The file is not what it says it is, so it cannot be taken.',
    hint: 'Send the file itself, of the type its name and declared type say; renaming a file does not change it.',
  },
  idempotency_key_in_use: {
    status: 409,
    message: 'A request with this Idempotency-Key is still running.',
    hint: "Retry after the number of seconds in Retry-After; you will get the first request's result.",
  },
  version_conflict: {
    status: 409,
    message: 'The form changed since you read it.',
    hint: 'Read the form again with get_form, apply your change to the new version and send that version.',
  },
  form_not_accepting_responses: {
    status: 409,
    message: 'This form is not accepting responses.',
    hint: 'Only a published form takes responses; publish it with publish_form.',
  },
  form_closed: {
    status: 409,
    message: 'This form closed at its scheduled time and takes no more responses.',
    hint: 'Set a later closesAt (or null) with update_form, then publish_form reopens it.',
  },
  form_not_open: {
    status: 409,
    message: 'This form does not take responses before its opening time.',
    hint: 'Try again at opensAt (get_form shows it), or move opensAt with update_form.',
  },
  invite_required: {
    status: 403,
    message: 'This form takes answers by invitation only.',
    hint: 'Answer from an invitation link (/f/{publicId}?invite=...), or pass its secret as invite.',
  },
  invite_invalid: {
    status: 403,
    message: 'This invitation is not valid for this form.',
    hint: 'Use the whole link you were sent; create_invites makes new ones.',
  },
  invite_expired: {
    status: 410,
    message: 'This invitation has expired.',
    hint: 'Ask for a new invitation (create_invites).',
  },
  invite_revoked: {
    status: 410,
    message: 'This invitation was withdrawn.',
    hint: 'Ask for a new invitation (create_invites).',
  },
  invite_used: {
    status: 409,
    message: 'This invitation has already been answered.',
    hint: 'An invitation takes one response; list_invites shows its state.',
  },
  response_limit_reached: {
    status: 409,
    message: 'This form has all the responses it takes (maxResponses).',
    hint: 'Raise maxResponses (or set null) with update_form, then publish_form reopens it.',
  },
  quota_full: {
    status: 409,
    message: 'A quota these answers count toward is full.',
    hint: 'Raise its limit with update_form (quotas), or send answers outside it.',
  },
  challenge_used: {
    status: 409,
    message: "This spam check's solution was already used; nothing was stored.",
    hint: 'Fetch a new challenge, solve it and send the answers again.',
  },
  response_completed: {
    status: 409,
    message: 'This response is completed; its answers no longer change.',
    hint: 'delete_response removes it; create_response stores a new one.',
  },
  partial_responses_off: {
    status: 409,
    message: 'This form does not save partial responses.',
    hint: 'Turn it on with update_form { "partialResponses": true }.',
  },
  not_found: {
    status: 404,
    message: 'Not found.',
    hint: 'Check the identifier; GET /api/v1/tools lists the tools and list_forms the forms you can see.',
  },
  origin_not_allowed: {
    status: 403,
    message: 'Requests from this web origin are not allowed on /mcp.',
    hint: 'Call /mcp from a client without an Origin header, or ask the operator to add the origin to MCP_ALLOWED_ORIGINS.',
  },
  method_not_allowed: {
    status: 405,
    message: 'This method is not allowed on this path.',
    hint: 'Use one of the methods in the Allow header.',
  },
  payload_too_large: {
    status: 413,
    message: 'The request body is too large.',
    hint: 'Send a smaller body; page through large imports.',
  },
  request_timeout: {
    status: 408,
    message: 'The request took too long to arrive.',
    hint: 'Send the whole request, body included, within 60 seconds; retry on a new connection.',
  },
  unsupported_media_type: {
    status: 415,
    message: 'The request body must be JSON.',
    hint: 'Send "Content-Type: application/json" with a JSON object body.',
  },
  rate_limited: {
    status: 429,
    message: 'Request budget exceeded.',
    hint: 'Wait the number of seconds in Retry-After, then retry; RateLimit-* headers show your budget.',
  },
  pending_limit_reached: {
    status: 429,
    message: 'Too many files or answers in progress from this address or for this form; nothing was stored.',
    hint: 'Finish (submit) or remove earlier uploads and answers in progress, or try again later.',
  },
  internal_error: {
    status: 500,
    message: 'Something went wrong on our side.',
    hint: 'Retry later; if it keeps failing, report the requestId to the operator.',
  },
  service_unavailable: {
    status: 503,
    message: 'The service cannot serve requests right now.',
    hint: 'Retry later.',
  },
} as const;

export type ErrorCode = keyof typeof ERROR_CATALOG;
