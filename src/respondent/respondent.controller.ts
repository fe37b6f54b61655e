import { Controller, Get, Inject, Param, Post, Req, Res } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { RouteConfig } from '@nestjs/platform-fastify';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { formPost, isFormPost, isJsonRequest, isMultipart, MultipartConfig, parseJson } from '../common/http/body';
import { Public } from '../auth/public.decorator';
import { ApiError, ErrorDetail, pointerSegment } from '../common/errors/api-error';
import { sendScript } from '../common/html';
import { currentManager, inTransaction } from '../database/transaction';
import type { Readable } from 'node:stream';
import { blocksView } from '../forms/form-logic';
import { FormRecord, FormsService } from '../forms/forms.service';
import { AccessService } from '../access/access.service';
import { InviteRow, InvitesService } from '../access/invites.service';
import { inviteOfQuery, invitePage, isInviteRefusal } from './invite-walk';
import { answerFacts } from '../forms/limits';
import { CHALLENGE_FIELD, HONEYPOT, honeypotReason, SpamGate } from '../access/spam/spam-gate.service';
import { SpamResponses } from '../access/spam/spam-responses';
import { ALTCHA_WORKER_PATH, altchaAssets } from '../access/spam/altcha-assets';
import { SessionsService } from '../settings/sessions.service';
import { notAccepting, ResponsesService, ResponseView } from '../responses/responses.service';
import { endOfSubmitted, EndView, endView, recallBlock, recallLogic, valuesBefore, withSamePage } from './recall-page';
import { PartialResponsesService } from '../responses/partial-responses.service';
import { APP_CONFIG, AppConfig } from '../config/config';
import { WorkspacesService } from '../workspaces/workspaces.service';
import { Block, UPLOAD_ID } from '../forms/blocks';
import { fileLimitBytes, MB, UploadsService } from '../uploads/uploads.service';
import { FileStorage } from '../storage/file-storage';
import { FilePart, readMultipartPost } from './multipart-post';
import { FileRefusal, fileRefusedWords, refusalKind } from './file-words';
import { pageHeaders, postOrigin, prefersJson } from './page-headers';
import { ClientKeys } from './client-key';
import { PageState, PageStateSigner, STATE_MAX_AGE_MS } from './page-state';
import { heldSecretOf, partialAnswers, resumeCookie, resumedWalk, resumeSecretOf, savesPartials } from './partial-walk';
import {
  alreadySubmittedPage,
  answersFromFormPost,
  foldMatrixFields,
  confirmResumePage,
  crossSitePage,
  movedPage,
  FileView,
  formPage,
  messagePage,
  RawAnswers,
  savedPage,
  SpamView,
  stepPage,
  thankYouPage,
} from './respondent.page';
import { RESPONDENT_SCRIPT } from './respondent.script';
import { FrozenPages, StateTemplate } from './frozen-pages';
import { hashedAsset, IMMUTABLE } from './page-assets';
import { embedOriginsOf } from './page-reads';
import { answeredEmail } from './resume-email';
import { chooseLanguage, translate } from '../forms/translations/translations';
import {
  blockIdOf,
  hiddenFromQuery,
  keepPage,
  nextPage,
  Page,
  pageLogic,
  pageProblems,
  pagesOf,
  route,
  Route,
  seenOn,
  shownBlocks,
  stateTooLarge,
  walksPages,
} from './respondent.steps';

/** What a form's public id can look like (anything else is not a form, and never reaches the database). */
const PUBLIC_ID = /^[0-9A-Za-z_-]{1,64}$/;

/**
 * The page where people answer a published form: GET shows it (or, to a client that prefers
 * JSON, answers the form as JSON for embedding); POST takes the form post (and answers with a
 * page) or JSON `{ "answers": { blockId: value } }` for embedding (and answers with JSON). No
 * credential; the per-IP budget applies. Submissions are validated by the same code as
 * create_response, and a refused one stores nothing. Pages may be framed only by the origins the
 * form's workspace lists (see pageHeaders).
 */
@Public()
@ApiExcludeController()
@Controller('f')
export class RespondentController {
  constructor(
    private readonly forms: FormsService,
    private readonly responses: ResponsesService,
    private readonly workspaces: WorkspacesService,
    private readonly states: PageStateSigner,
    private readonly sessions: SessionsService,
    private readonly uploads: UploadsService,
    private readonly storage: FileStorage,
    private readonly partials: PartialResponsesService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
    private readonly clients: ClientKeys,
    private readonly access: AccessService,
    private readonly invites: InvitesService,
    private readonly spam: SpamGate,
    private readonly spamKept: SpamResponses,
    private readonly frozen: FrozenPages,
  ) {}

  /** The pages' one script (respondent.script.ts): same-page questions appear at once. The pages work without it. */
  @Get('assets/respondent.js')
  script(@Res() res: Response) {
    sendScript(res, RESPONDENT_SCRIPT);
  }

  /** The pages' script and style sheet named by their content (page-assets.ts): kept a year by browsers and CDNs. */
  @Get('assets/:file')
  asset(@Param('file') file: string, @Res() res: Response) {
    const asset = hashedAsset(file);
    if (!asset)
      throw new ApiError('not_found', {
        message: 'There is no such file.',
        hint: 'Reload the form: its page names the files it uses.',
      });
    res
      .status(200)
      .headers({ 'Content-Type': asset.contentType, 'Cache-Control': IMMUTABLE, 'X-Content-Type-Options': 'nosniff' })
      .send(asset.body);
  }

  /** The spam check's widget (issue 47), served from this origin (altcha-assets.ts). */
  @Get('assets/altcha.js')
  altchaScript(@Res() res: Response) {
    sendScript(res, altchaAssets().script);
  }

  /** The widget's proof-of-work worker (worker-src 'self'). */
  @Get(ALTCHA_WORKER_PATH.slice('/f/'.length))
  altchaWorker(@Res() res: Response) {
    sendScript(res, altchaAssets().worker);
  }

  /** A fresh challenge of the spam check for the form's page (the widget fetches it): bound to the form, used once. */
  @Get(':publicId/challenge')
  async challenge(@Param('publicId') publicId: string, @Res() res: Response) {
    const form = await this.findForm(publicId);
    if (!form) throw formNotFound();
    const shut = await this.shut(form);
    if (shut) throw shut;
    res
      .status(200)
      .header('Cache-Control', 'no-store')
      .send(await this.spam.challenge(form));
  }

  @Get(':publicId')
  async show(@Param('publicId') publicId: string, @Req() req: Request, @Res() res: Response) {
    res.header('Vary', 'Accept, Accept-Language'); // the same URL answers HTML or JSON, in the form's languages
    const form = await this.findForm(publicId, req);
    if (prefersJson(req.headers.accept)) {
      if (!form) throw formNotFound();
      const shut = await this.shut(form);
      if (shut) throw shut;
      res.status(200).header('Cache-Control', 'no-store').send(formForEmbedding(form));
      return;
    }
    if (!form) return sendPage(res, 404, notFoundPage());
    const headers = await this.headersFor(form);
    const shut = await this.shut(form);
    if (shut) return sendPage(res, 409, closedPage(shut, form.status), headers);
    // Invitations (issue 47): a link's invite opens a walk with its hidden values; an invite-only form opens only so, or resumed.
    const link = inviteOfQuery(req.query);
    let invite: InviteRow | undefined;
    const resumable = savesPartials(form) && !!resumeSecretOf(req.query, req.headers.cookie).secret;
    if (link !== undefined || (form.access === 'invite' && !resumable)) {
      try {
        invite = await this.invites.bySecret(form, link);
      } catch (err) {
        if (isInviteRefusal(err)) return sendPage(res, err.status, invitePage(err), headers);
        throw err;
      }
    }
    if (!walksPages(form) && !invite) {
      const frozen = await this.frozenPage(form, 'one');
      if (frozen) return sendPage(res, 200, frozen, headers);
      return sendPage(
        res,
        200,
        formPage(
          form,
          {},
          [],
          await this.fileView(form, {}),
          await this.spamView(form, form.spamProtection === 'always'),
        ),
        headers,
      );
    }
    const resumed = savesPartials(form) && !invite ? await this.resume(form, req) : undefined;
    if (resumed?.redirect)
      return void res
        .status(303)
        .headers({ ...headers, 'Set-Cookie': resumed.cookie! })
        .header('Location', `/f/${form.publicId}`)
        .send();
    if (resumed)
      return sendPage(res, 200, resumed.html!, resumed.cookie ? { ...headers, 'Set-Cookie': resumed.cookie } : headers);
    const hidden = { ...hiddenFromQuery(form.hiddenFields, req.query), ...invite?.hidden };
    const frozen = !invite && !Object.keys(hidden).length ? await this.frozenPage(form, 'first') : undefined;
    if (frozen) return sendPage(res, 200, frozen, headers);
    const state = this.newState(form, {}, hidden);
    state.v = invite?.id;
    const r = route(form, state.a, state.h);
    sendPage(res, 200, await this.drawStep(form, state, r.onPath[0] ?? r.pages[0], r), headers);
  }

  /**
   * Where the page's script sends a chosen file (JSON `{ block, filename, contentType, size }`):
   * a pending upload and its target, as create_upload answers, on the form's workspace's plan. The
   * browser then PUTs the bytes straight there and the form posts the upload id.
   */
  @Post(':publicId/uploads')
  async createUpload(@Param('publicId') publicId: string, @Req() req: Request, @Res() res: Response) {
    const form = await this.findForm(publicId);
    if (!form) throw formNotFound();
    if ((await this.originOf(form, req)) === 'cross-site') throw crossSite();
    const shut = await this.shut(form);
    if (shut) throw shut;
    const body = isJsonRequest(req) ? parseJson(String(req.body ?? '')) : undefined;
    const { block, filename, contentType, size } = (body ?? {}) as Record<string, unknown>;
    const bad = [
      typeof block !== 'string' && { path: '/block', message: 'must be the block id' },
      typeof filename !== 'string' && { path: '/filename', message: 'must be the file name' },
      typeof contentType !== 'string' && { path: '/contentType', message: 'must be the file type' },
      !(Number.isInteger(size) && (size as number) > 0) && { path: '/size', message: 'must be the size in bytes' },
    ].filter((d): d is ErrorDetail => !!d);
    if (bad.length)
      throw new ApiError('invalid_arguments', {
        message: 'The body must be { "block", "filename", "contentType", "size" } of the chosen file.',
        hint: 'Send the block id, the file name, its type and its size in bytes, as JSON.',
        details: bad,
      });
    const plan = await this.workspaces.planOf(form.workspaceId);
    const client = await this.clients.of(req.ip);
    const input = {
      workspaceId: form.workspaceId,
      plan,
      form,
      block: block as string,
      filename: filename as string,
      client,
    };
    let created;
    try {
      created = await this.uploads.create({ ...input, contentType: contentType as string, size: size as number });
    } catch (err) {
      // A file the question does not take: said for the person who chose it (the page shows it by the file).
      const target = form.blocks.find(
        (b) => (b.id === block || (b.ref && b.ref === block)) && b.type === 'file_upload',
      );
      const path = err instanceof ApiError && err.code === 'invalid_arguments' ? err.details?.[0]?.path : undefined;
      if (!target || !path || path === '/block') throw err;
      const why = path === '/size' ? 'size' : path === '/contentType' ? 'type' : 'other';
      throw fileProblem(target, filename as string, why, fileLimitBytes(target, plan) / MB);
    }
    res.status(201).header('Cache-Control', 'no-store').send(created);
  }

  /**
   * The page's script, once the browser's PUT of an upload's bytes succeeded: whether they are
   * what the file said it was (JSON `{ "block" }`). `200 { ok: true }`, or a 400 in the page's
   * words naming the file (its type contradicted, its bytes not all there), the upload deleted.
   */
  @Post(':publicId/uploads/:uploadId/check')
  async checkUpload(
    @Param('publicId') publicId: string,
    @Param('uploadId') uploadId: string,
    @Req() req: Request,
    @Res() res: Response,
  ) {
    const form = await this.findForm(publicId);
    if (!form) throw formNotFound();
    const shut = await this.shut(form);
    if (shut) throw shut;
    const body = isJsonRequest(req) ? parseJson(String(req.body ?? '')) : undefined;
    const blockId = (body as { block?: unknown } | undefined)?.block;
    const block = form.blocks.find((b) => b.id === blockId && b.type === 'file_upload');
    if (!block || !UPLOAD_ID.test(uploadId))
      throw new ApiError('invalid_arguments', {
        message: 'The body must be { "block" }: the file question the upload was made for.',
        details: [
          {
            path: block ? '/uploadId' : '/block',
            message: block ? 'must be an upload id' : 'must be a file question of this form',
          },
        ],
      });
    const why = await this.receivedProblem(form, block.id, uploadId);
    if (!why) return void res.status(200).header('Cache-Control', 'no-store').send({ ok: true });
    const name = (await this.pendingUploads(form.id, [uploadId])).get(uploadId)?.name;
    if (name && why !== 'gone') await this.uploads.discard([uploadId]); // a refused file is never kept
    throw fileProblem(block, name, why);
  }

  /**
   * What is wrong with the bytes an upload received, as the page says it, or undefined: the one
   * place the page asks the uploads service. verifyReceived reads the bytes (on S3 too: sealed and
   * read there); refusal() then checks the upload against the question as it is now.
   */
  private async receivedProblem(form: FormRecord, blockId: string, uploadId: string): Promise<FileRefusal | undefined> {
    const received = await this.uploads.verifyReceived(uploadId, form.id);
    if (received?.code === 'not_found') return 'gone';
    if (received?.code === 'file_refused')
      return /did not arrive whole/.test(received.message) ? 'arrival' : 'contents';
    if (received) return 'arrival';
    const files = [{ blockId, key: blockId, uploadIds: [uploadId] }];
    const refused = await this.uploads.refusal(currentManager(this.db), {
      workspaceId: form.workspaceId,
      formId: form.id,
      blocks: form.blocks,
      files,
    });
    const message = refused?.details?.[0]?.message;
    return message === undefined ? undefined : refusalKind(message.replace(/^upl_[A-Za-z0-9]+: /, ''));
  }

  /**
   * Form posts: flat fields (repeated names, as checkboxes send them, become lists), 200 KB, 1,000
   * fields; a form with file questions posts multipart/form-data, its files streamed to storage.
   */
  @Post(':publicId')
  @RouteConfig({ ...formPost(200 * 1024, 1000), multipart: true } satisfies MultipartConfig & object)
  async submit(@Param('publicId') publicId: string, @Req() req: Request, @Res() res: Response) {
    if (!PUBLIC_ID.test(publicId)) {
      if (isJsonRequest(req)) throw formNotFound();
      return sendPage(res, 404, notFoundPage());
    }
    if (isJsonRequest(req)) {
      const body = parseJson(String(req.body ?? '')) as
        { answers?: unknown; hidden?: unknown; invite?: unknown } | undefined;
      const answers = body?.answers;
      if (!answers || typeof answers !== 'object' || Array.isArray(answers)) {
        throw new ApiError('invalid_arguments', {
          message: 'The body must be { "answers": { "<blockId>": value } }.',
          details: [{ path: '/answers', message: 'must be an object of answers by block id' }],
        });
      }
      const hidden = body?.hidden;
      if (hidden !== undefined && (!hidden || typeof hidden !== 'object' || Array.isArray(hidden))) {
        throw new ApiError('invalid_arguments', {
          message: 'hidden must be an object of values by hidden field name.',
          details: [{ path: '/hidden', message: 'must be an object of text values by hidden field name' }],
        });
      }
      if (body?.invite !== undefined && typeof body.invite !== 'string')
        throw new ApiError('invalid_arguments', {
          message: "invite must be the secret of an invitation link (after '?invite=').",
          details: [{ path: '/invite', message: 'must be a string' }],
        });
      const kept = await this.spamOfJson(publicId, req, body as Record<string, unknown>);
      if (kept) return void res.status(201).send(kept);
      const response = await this.responses.submit(
        publicId,
        answers as Record<string, unknown>,
        hidden as Record<string, string> | undefined,
        body?.invite === undefined ? undefined : { invite: body.invite as string },
      );
      res.status(201).send(response);
      return;
    }

    // A browser's form post.
    const form = await this.findForm(publicId, req);
    if (!form)
      return sendPage(res, 404, notFoundPage(), { ...pageHeaders([]), ...(isMultipart(req) ? closing() : {}) });
    let headers = await this.headersFor(form);
    // A post made by another site's page (issue 45, 6.2): refused before any of it is read or stored.
    if ((await this.originOf(form, req)) === 'cross-site')
      return sendPage(res, 403, crossSitePage(form), { ...headers, ...(isMultipart(req) ? closing() : {}) });
    // Nothing is stored for a form that takes no answers (its status or schedule); an unread body closes the connection.
    const shut = await this.shut(form);
    if (shut)
      return sendPage(res, 409, closedPage(shut, form.status), { ...headers, ...(isMultipart(req) ? closing() : {}) });
    let raw = (isFormPost(req) ? req.body : {}) as RawAnswers;
    // Spam defence (issue 47): this post counts toward the rates that make the challenge required.
    const challenge = await this.spam.needsChallenge(form, req.ip);
    const fileProblems: ErrorDetail[] = [];
    let fileStatus = 400;
    if (isMultipart(req)) {
      try {
        const post = await this.receiveFiles(form, req, fileProblems);
        raw = post.fields;
        // A file over its limit: the same page, its answers kept, the problem at the file question (issue 45).
        if (post.oversize) fileStatus = 413;
        if (post.cut) headers = { ...headers, ...closing() };
      } catch (err) {
        if (err instanceof ApiError && err.code === 'payload_too_large')
          return sendPage(res, 413, tooLargePage(form, err.message), { ...headers, ...closing() });
        // A sender that stopped: answer and close, so its socket does not stay open behind the page.
        if (err instanceof ApiError && err.code === 'request_timeout')
          return sendPage(res, 408, stalledPage(form), { ...headers, ...closing() });
        if (err instanceof ApiError && err.code === 'pending_limit_reached')
          return sendPage(res, 429, pendingLimitPage(form, err.message), { ...headers, ...closing() });
        throw err;
      }
    }
    raw = foldMatrixFields(form.blocks, raw);
    // A one-page form's plain page carries a state only for the spam defence (its times, its
    // challenge): it is answered below. An invitation's walk (its state names the invite) is a walk.
    const drawn = await this.states.verify(raw._state, form.id);
    if (walksPages(form) || drawn?.v) {
      if (typeof raw._resume === 'string' && raw._state === undefined && savesPartials(form)) {
        // The confirmation of a resume link opened without a person's click (see resume()). A post
        // not known to come from the page never replaces answers this browser holds: it asks again.
        const held = heldSecretOf(req.headers.cookie);
        if (
          held &&
          held !== raw._resume &&
          !this.fromPage(req) &&
          (await this.partials.resume(form.id, held)).kind === 'partial'
        )
          return sendPage(res, 200, confirmResumePage(form, raw._resume, true), headers);
        const moved = await this.moveTo(form, raw._resume, req);
        if (moved)
          return void res
            .status(303)
            .headers({ ...headers, 'Set-Cookie': moved })
            .header('Location', `/f/${form.publicId}`)
            .send();
        return sendPage(res, 200, (await this.resume(form, req, raw._resume))?.html ?? notFoundPage(), headers);
      }
      const [status, html, cookie, location] = await this.step(form, raw, fileProblems, req, fileStatus, challenge);
      const sent = cookie ? { ...headers, 'Set-Cookie': cookie } : headers;
      return sendPage(res, status, html, location ? { ...sent, Location: location } : sent);
    }
    const fileView = () => this.fileView(form, raw);
    const spamView = () => this.spamView(form, challenge || !!drawn?.c, drawn?.o);
    if (fileProblems.length)
      return sendPage(res, fileStatus, formPage(form, raw, fileProblems, await fileView(), await spamView()), headers);
    if (challenge && drawn && !drawn.c && !raw[CHALLENGE_FIELD]) {
      // The challenge became required after this page was drawn without it: the page again, with it.
      const spam = { ...(await this.spamView(form, true, drawn.o)), notice: ONE_MORE_STEP };
      const page = formPage(form, raw, [], await fileView(), spam);
      return sendPage(res, 200, page, headers);
    }
    const verdict = await this.spam.judge(form, {
      honeypot: raw[HONEYPOT],
      startedAt: drawn?.o,
      payload: raw[CHALLENGE_FIELD],
      challenge: challenge || !!drawn?.c,
    });
    if (verdict === 'replayed') return sendPage(res, 409, replayedPage(form), headers);
    if (verdict) {
      // Kept apart, and answered like any other post (the bot learns nothing).
      const answers = answersFromFormPost(form.blocks, raw);
      await this.spamKept.keep(currentManager(this.db), form.id, { answers, reason: verdict });
      return this.sendEnd(res, form, endView(form, {}, {}), headers);
    }
    let submitted: ResponseView;
    try {
      submitted = await this.responses.submit(publicId, answersFromFormPost(form.blocks, raw));
    } catch (err) {
      if (err instanceof ApiError && err.code === 'invalid_arguments') {
        const words = await this.fileProblemsInWords(form, err.details ?? [], raw);
        return sendPage(
          res,
          400,
          formPage(form, words.values, words.details, await this.fileView(form, words.values), await spamView()),
          headers,
        );
      }
      if (err instanceof ApiError && CLOSED_CODES.has(err.code))
        return sendPage(res, 409, closedPage(err, form.status), headers);
      if (isInviteRefusal(err)) return sendPage(res, err.status, invitePage(err), headers);
      if (err instanceof ApiError && err.code === 'quota_full')
        return sendPage(res, 200, (await this.screenedOut(form, route(form, raw, {}))) ?? fullPage(err), headers);
      throw err;
    }
    this.sendEnd(res, form, endOfSubmitted(form, submitted), headers);
  }

  /**
   * The page that ends the form (issue 46): an ending with a redirect goes there (303), with the
   * page as its body. A form that computes nothing ends with the same words for everyone: that
   * page is drawn once per form version (FrozenPages); an ending may recall answers, so it is drawn
   * for each (and no one's answers are kept).
   */
  private sendEnd(res: Response, form: FormRecord, end: EndView, headers: Record<string, string>) {
    const key = {
      formId: form.id,
      version: form.version,
      page: 'end' as const,
      end: JSON.stringify(end),
      language: form.language,
    };
    const page = form.compute ? thankYouPage(form, end) : this.frozen.whole(key, () => thankYouPage(form, end));
    if (end.redirectUrl) return sendPage(res, 303, page, { ...headers, Location: end.redirectUrl });
    sendPage(res, 200, page, headers);
  }

  /**
   * One step of the walk through a form of several pages (docs/respondent.md). The post carries
   * the signed state (answers so far, pages visited, nonce) and the current page's fields; the
   * forms' one evaluator (route(): validateResponse, so walk()) decides what is shown next:
   * - Back: keeps the page's answers and shows the previous page, without checking them;
   * - Next: when the answers show blocks on this page that it did not show (nor its script, which
   *   lists those it showed in _seen), the same page again (a person sees the new questions before
   *   moving on); else the page's problems with the error summary; else the next page on the path;
   *   else (the answers end the form there: last page, or a jump to end) the submission, whether
   *   the button said Next or Submit: the person saw every question these answers ask, and
   *   showing the page again only to change the button was a step for nothing (issue 34). It is
   *   stored once per nonce (a double click or a replayed post finds its nonce used, in the same
   *   transaction as the response, and gets the thank-you page).
   * - Both: when the answers have grown too large to carry in the page (stateTooLarge), the same
   *   page with a problem on its longest answer, rather than a next post over the body limit.
   * A post without a valid state (an old page, another form's) starts the walk again with the
   * answers it carries.
   */
  private async step(
    form: FormRecord,
    raw: RawAnswers,
    fileProblems: ErrorDetail[],
    req: Request,
    fileStatus = 400,
    challenge = false,
  ): Promise<[number, string, string?, string?]> {
    const pages = pagesOf(form.blocks);
    const verified = await this.states.verify(raw._state, form.id);
    const state = verified ?? this.newState(form, {}, {});
    // Spam defence (issue 47): a honeypot filled on any page marks the walk; once asked, the challenge stays asked.
    const askedBefore = !!state.c;
    state.z ??= honeypotReason(raw[HONEYPOT]);
    if (challenge) state.c = 1;
    // Link fixation (issue 45, 6.2): a post not known to come from the page (Origin: null, no
    // Sec-Fetch-Site) may carry another person's state; it never continues the partial that state
    // names unless this browser's cookie holds it: a new partial starts, with the answers.
    if (state.p && state.p !== heldSecretOf(req.headers.cookie) && !this.fromPage(req)) {
      state.p = undefined;
      state.i = undefined;
    }
    // Invitations (issue 47): nothing is saved nor stored for a walk its invite no longer admits.
    const uninvited = await this.invites.walkRefusal(form, state.v);
    if (uninvited) return [uninvited.status, invitePage(uninvited)];
    // The current page; a page the form no longer has sends the walk back to the first page.
    let current = pages.find((p) => p.key === state.s[state.s.length - 1]);
    if (!current) {
      current = pages[0];
      state.s = [current.key];
    }
    const before = state.a;
    state.a = keepPage(current, state.a, raw);
    const action = Array.isArray(raw._action) ? raw._action[0] : raw._action;
    const tooLarge = stateTooLarge(state, current);
    if (fileProblems.length) {
      // A file the post carried was refused (its type, its name): this page again, saying so.
      const r = route(form, state.a, state.h);
      return [fileStatus, await this.drawStep(form, state, current, r, fileProblems)];
    }
    if (tooLarge) {
      // Signed with the answers before this page's (so the next post fits), drawn with what was typed.
      const kept = { ...state, a: before };
      const r = route(form, state.a, state.h);
      return [400, await this.drawStep(form, kept, current, r, [tooLarge], undefined, state.a)];
    }

    if (action === 'save' && savesPartials(form)) {
      // Save and finish later: this page's answers kept unchecked (as Back keeps them), and the resume link.
      const saved = await this.savePartial(form, state, route(form, state.a, state.h), req);
      if (saved.failed) return this.saveFailed(form, saved, current);
      if (!saved.state.p || saved.limited)
        return [saved.limited ? 429 : 200, await this.drawStep(form, state, current, saved.r, [], saved.notice)];
      const link = `${this.config.publicUrl}/f/${form.publicId}?resume=${saved.state.p}`;
      const email = { secret: saved.state.p, address: answeredEmail(form.blocks, state.a) };
      return [200, savedPage(form, link, this.config.partialResponseRetentionDays, email), saved.cookie];
    }

    if (action === 'back' && state.s.length > 1) {
      const saved = await this.savePartial(
        form,
        { ...state, s: state.s.slice(0, -1) },
        route(form, state.a, state.h),
        req,
      );
      if (saved.failed) return this.saveFailed(form, { ...saved, state }, current);
      state.s = state.s.slice(0, -1);
      const back = pages.find((p) => p.key === state.s[state.s.length - 1]) ?? pages[0];
      return [200, await this.drawStep(form, saved.state, back, saved.r, [], saved.notice), saved.cookie];
    }

    const r = route(form, state.a, state.h);
    const drawn = new Set([...state.r, ...seenOn(current, raw)]);
    if (verified && shownBlocks(current, r).some((b) => !drawn.has(b.id)))
      return [
        200,
        await this.drawStep(
          form,
          state,
          current,
          r,
          [],
          'Your answers added questions to this page. Answer them, then go on.',
        ),
      ];
    const problems = pageProblems(current, r);
    if (problems.length) return [400, await this.drawStep(form, state, current, r, problems)];
    // A full quota these answers match: screened out here (issue 47); a saved partial stays one.
    const screened = await this.screenedOut(form, r);
    if (screened) return [200, screened];
    const next = nextPage(current.key, r);
    if (next) {
      const saved = await this.savePartial(form, { ...state, s: [...state.s, next.key] }, r, req);
      if (saved.failed) return this.saveFailed(form, { ...saved, state }, current);
      return [200, await this.drawStep(form, saved.state, next, r, [], saved.notice), saved.cookie];
    }

    // The end of the path: submit, once per nonce.
    if (Date.now() - state.t > STATE_MAX_AGE_MS) {
      // The nonce may be forgotten by now: show the page again with a fresh one, to be sent again.
      const fresh = { ...state, n: this.sessions.nonce(), t: Date.now() };
      return [200, await this.drawStep(form, fresh, current, r, [], 'Check your answers, then submit them.')];
    }
    if (state.c && verified && !askedBefore && !raw[CHALLENGE_FIELD])
      // The challenge became required after this page was drawn without it: the page again, with it.
      return [200, await this.drawStep(form, state, current, r, [], ONE_MORE_STEP)];
    const verdict = await this.spam.judge(form, {
      honeypot: undefined, // in state.z
      startedAt: state.o,
      payload: raw[CHALLENGE_FIELD],
      challenge: !!state.c,
      earlier: state.z,
    });
    if (verdict === 'replayed') return [409, replayedPage(form)];
    try {
      await inTransaction(this.db, async () => {
        // (useNonce and submit both use the transaction's manager: currentManager.)
        if (!(await this.sessions.useNonce(`respondent:${state.n}`))) return;
        // A walk judged as spam is kept apart, and ends like any other (the bot learns nothing).
        if (verdict)
          await this.spamKept.keep(currentManager(this.db), form.id, {
            answers: r.answers,
            hidden: state.h,
            reason: verdict,
          });
        else await this.finish(form, state, r);
      });
    } catch (err) {
      if (err instanceof ApiError && err.code === 'response_completed') return [200, alreadySubmittedPage(form)];
      if (err instanceof ApiError && err.code === 'invalid_arguments') {
        // The form changed under the walk (or a state from before, or a file refused): the first page with a problem.
        const { details, values } = await this.fileProblemsInWords(form, err.details ?? [], state.a, state.i);
        const wrong = new Set(details.map((d) => blockIdOf(d.path)));
        const at = r.onPath.find((p) => p.blocks.some((b) => wrong.has(b.id))) ?? current;
        const visited = state.s.indexOf(at.key);
        state.s = visited >= 0 ? state.s.slice(0, visited + 1) : [...state.s, at.key];
        state.a = values;
        return [400, await this.drawStep(form, state, at, route(form, state.a, state.h), details)];
      }
      if (err instanceof ApiError && CLOSED_CODES.has(err.code)) return [409, closedPage(err, form.status)];
      if (isInviteRefusal(err)) return [err.status, invitePage(err)];
      if (err instanceof ApiError && err.code === 'quota_full')
        return [200, (await this.screenedOut(form, r)) ?? fullPage(err)];
      throw err;
    }
    // Submitted: this browser forgets the partial's secret.
    const forget = state.p ? resumeCookie(form.publicId, undefined, req.protocol === 'https') : undefined;
    const end = endView(form, r.stored, r.hidden);
    // An ending's redirect (issue 46): 303 to it, the ending's page as the body.
    if (end.redirectUrl) return [303, thankYouPage(form, end), forget, end.redirectUrl];
    return [200, thankYouPage(form, end), forget];
  }

  /** Stores the submission: the walk's partial completed when it saved one, else a new response. */
  private async finish(form: FormRecord, state: PageState, r: Route): Promise<void> {
    let stored: { id: string } | undefined;
    if (state.p && savesPartials(form)) {
      try {
        stored = await this.partials.complete(form, { resumeSecret: state.p, answers: r.answers, hidden: state.h });
      } catch (err) {
        // A partial deleted meanwhile (retention) or unknown: the answers are submitted as a new response.
        if (!(err instanceof ApiError) || err.code !== 'not_found') throw err;
      }
    }
    stored ??= await this.responses.submit(form.publicId, r.answers, state.h, { invited: !!state.v });
    // The walk's invitation is answered in the same transaction, once (issue 47).
    if (state.v) await this.invites.answered(currentManager(this.db), state.v, stored.id);
  }

  /**
   * With partial responses on, saves the walk so far (the valid answers on the pages visited, the
   * pages, the page now shown, the last in state.s) and keeps its resume secret in the state and the
   * cookie. A save the service refuses (a file it does not take, say) is `failed`, with its problems:
   * the walk stays on the page (saveFailed).
   */
  private async savePartial(
    form: FormRecord,
    state: PageState,
    r: Route,
    req: Request,
  ): Promise<{
    state: PageState;
    r: Route;
    cookie?: string;
    notice?: string;
    limited?: boolean;
    failed?: ErrorDetail[];
  }> {
    if (!savesPartials(form)) return { state, r };
    try {
      const saved = await this.partials.save(form, {
        resumeSecret: state.p,
        answers: partialAnswers(state, r),
        hidden: state.h,
        pagesReached: state.s,
        lastPage: state.s[state.s.length - 1],
        ip: req.ip,
        client: await this.clients.of(req.ip),
      });
      // The invitation's first saved partial: it reads as started (issue 47).
      if (state.v && saved.responseId !== state.i) await this.invites.started(state.v, saved.responseId);
      // A post not known to come from the page never replaces the partial this browser holds (issue 45, 6.2).
      const held = heldSecretOf(req.headers.cookie);
      const keep = !held || held === saved.resumeSecret || this.fromPage(req);
      const cookie = keep ? this.keepCookie(form, saved.resumeSecret, req) : undefined;
      return { state: { ...state, p: saved.resumeSecret, i: saved.responseId }, r, cookie };
    } catch (err) {
      if (!(err instanceof ApiError) || err.status >= 500) throw err;
      if (err.code === 'pending_limit_reached') {
        const notice = `${err.message} You can still go on and submit them, or try saving again later.`;
        return { state, r, notice, limited: true };
      }
      if (err.code !== 'response_completed') return { state, r, failed: err.details ?? [] };
      const notice =
        'These answers were already submitted (from the link to finish later): what you send now is a new response.';
      return { state: { ...state, p: undefined }, r, notice };
    }
  }

  /**
   * A save refused: the page the person is on again, with what they entered, the refusal at its
   * questions in the page's words (a refused file dropped), and what to do (issue 45).
   */
  private async saveFailed(
    form: FormRecord,
    saved: { state: PageState; failed?: ErrorDetail[] },
    current: Page,
  ): Promise<[number, string]> {
    const { state } = saved;
    const words = await this.fileProblemsInWords(form, saved.failed ?? [], state.a, state.i);
    const fixed = { ...state, a: words.values };
    const shown = new Set(current.blocks.map((b) => b.id));
    const here = words.details.filter((d) => shown.has(blockIdOf(d.path)));
    const notice = here.length
      ? 'Your answers could not be saved: fix the problem below, then go on.'
      : 'Your answers could not be saved just now, so this page stays with them. Try again in a moment.';
    return [400, await this.drawStep(form, fixed, current, route(form, fixed.a, fixed.h), here, notice)];
  }

  /**
   * A refusal's details as the page says them: a file's problem ("upl_…: the file's bytes are …",
   * the uploads service's words for the tools) becomes a sentence naming the file, in the page's
   * words; the refused upload is dropped from the values (and deleted when it is this form's and
   * pending: a refused file is never kept). Other details are kept as they are.
   */
  private async fileProblemsInWords(
    form: FormRecord,
    details: ErrorDetail[],
    values: RawAnswers,
    partialId?: string,
  ): Promise<{ details: ErrorDetail[]; values: RawAnswers }> {
    const refused = details.flatMap((d) => {
      const m = /^(upl_[A-Za-z0-9]+): (.*)$/s.exec(d.message);
      const block = form.blocks.find((b) => b.id === blockIdOf(d.path) && b.type === 'file_upload');
      return m && block ? [{ detail: d, id: m[1], why: refusalKind(m[2]), block }] : [];
    });
    if (!refused.length) return { details, values };
    const names = await this.pendingUploads(
      form.id,
      refused.map((f) => f.id),
      partialId,
    );
    const plan = await this.workspaces.planOf(form.workspaceId);
    const words = new Map(
      refused.map((f) => [
        f.detail,
        fileRefusedWords(f.block, names.get(f.id)?.name, f.why, fileLimitBytes(f.block, plan) / MB),
      ]),
    );
    const drop = new Set(refused.map((f) => f.id));
    const kept = { ...values };
    for (const b of new Set(refused.map((f) => f.block.id))) {
      const left = [kept[b] ?? []].flat().filter((id) => !drop.has(id));
      kept[b] = left.length ? left : undefined;
    }
    const discard = refused.filter((f) => names.has(f.id) && f.why !== 'gone').map((f) => f.id);
    await this.uploads.discard(discard);
    return { details: details.map((d) => ({ ...d, message: words.get(d) ?? d.message })), values: kept };
  }

  /**
   * GET of a form that saves partials, with a resume link (?resume=) or this browser's cookie: the
   * walk where the person stopped, every answer and the hidden values fixed at the start in place
   * (the form as it is now: see resumedWalk). A completed response's secret shows only that it was
   * submitted; an unknown one (a guess, another form's, tampered, expired) the first page, fresh
   * (a link never clears the cookie: this browser's own answers, if any, are shown instead).
   * Link fixation (issue 45, 6.1): a link opened in a browser whose cookie does not hold its secret
   * moves the partial there under a new secret (moveTo) and redirects to the clean URL; the old
   * link then says its answers continue elsewhere. Only on a person's navigation (Sec-Fetch-User)
   * in a browser holding no answers of its own; otherwise (a link preview or scanner, an old
   * browser, answers of its own in this browser) a page asks first, showing none of the answers,
   * and its button (a post, `confirmed`) moves it. Each attempt is a request of the per-IP budget,
   * spent before the route runs. Undefined when there is nothing to resume.
   */
  private async resume(
    form: FormRecord,
    req: Request,
    confirmed?: string,
  ): Promise<{ html?: string; cookie?: string; redirect?: boolean } | undefined> {
    const { secret, fromLink } =
      confirmed !== undefined
        ? resumeSecretOf({ resume: confirmed }, undefined)
        : resumeSecretOf(req.query, req.headers.cookie);
    if (!secret && !fromLink) return undefined;
    const held = heldSecretOf(req.headers.cookie);
    // The cookie is forgotten only for what it holds itself.
    const mine = !fromLink || (secret !== undefined && secret === held);
    const forget = mine ? resumeCookie(form.publicId, undefined, req.protocol === 'https') : undefined;
    const found = secret ? await this.partials.resume(form.id, secret) : ({ kind: 'unknown' } as const);
    if (found.kind === 'completed') return { html: alreadySubmittedPage(form), cookie: forget };
    if (found.kind === 'moved') {
      // The link opened again in the browser it moved to: that browser's walk.
      const own = fromLink && held ? await this.partials.resume(form.id, held) : undefined;
      if (own?.kind === 'partial' && own.partial.responseId === found.responseId)
        return { redirect: true, cookie: this.keepCookie(form, held!, req) };
      return { html: movedPage(form), cookie: forget };
    }
    if (found.kind === 'unknown') {
      const own = fromLink && held && held !== secret ? await this.partials.resume(form.id, held) : undefined;
      const notice = fromLink
        ? 'This link to finish later does not open any answers (it may have expired): the form starts again here.'
        : undefined;
      if (own?.kind === 'partial')
        return {
          html: await this.resumedPage(
            form,
            held!,
            own.partial,
            'This link to finish later does not open any answers (it may have expired). Your answers so far in this browser are filled in.',
          ),
          cookie: this.keepCookie(form, held!, req),
        };
      const state = this.newState(form, {}, hiddenFromQuery(form.hiddenFields, req.query));
      const r = route(form, state.a, state.h);
      return { html: await this.drawStep(form, state, r.onPath[0] ?? r.pages[0], r, [], notice), cookie: forget };
    }
    if (fromLink && secret !== held) {
      if (confirmed === undefined && (held || req.headers['sec-fetch-user'] !== '?1'))
        return { html: confirmResumePage(form, secret!, !!held) };
      const cookie = await this.moveTo(form, secret!, req);
      return cookie ? { redirect: true, cookie } : { html: movedPage(form) };
    }
    const html = await this.resumedPage(
      form,
      secret!,
      found.partial,
      'Welcome back: your answers so far are filled in.',
    );
    return { html, cookie: this.keepCookie(form, secret!, req) };
  }

  /** The walk of a partial this browser holds (under `secret`), where the person stopped. */
  private async resumedPage(
    form: FormRecord,
    secret: string,
    partial: Parameters<typeof resumedWalk>[1] & { responseId: string; startedAt?: Date },
    notice: string,
  ): Promise<string> {
    const w = resumedWalk(form, partial);
    const state: PageState = { ...this.newState(form, w.a, w.h), s: w.s, p: secret, i: partial.responseId };
    state.v = (await this.invites.ofPartial(form, partial.responseId))?.id;
    // The spam gate's time to fill runs from the walk's start, not from its resumption (issue 47).
    if (partial.startedAt) state.o = partial.startedAt.getTime();
    return this.drawStep(form, state, w.page, w.r, [], notice);
  }

  /** Moves the partial of a resume link to this browser under a new secret: the cookie that keeps it, or undefined when there was none to move. */
  private async moveTo(form: FormRecord, secret: string, req: Request): Promise<string | undefined> {
    const moved = await this.partials.moveResume(form.id, secret);
    return moved ? this.keepCookie(form, moved.resumeSecret, req) : undefined;
  }

  /** Where a post came from (postOrigin): this service's origins are PUBLIC_URL's and the one the request was sent to. */
  private async originOf(form: FormRecord, req: Request) {
    const site = postOrigin(req.headers, this.ownOrigins(req), []);
    if (site !== 'cross-site') return site;
    return postOrigin(req.headers, this.ownOrigins(req), await this.workspaces.embedOriginsOf(form.workspaceId));
  }

  /** Whether a post is known to come from the form's own page (postOrigin 'same-origin'). */
  private fromPage(req: Request): boolean {
    return postOrigin(req.headers, this.ownOrigins(req), []) === 'same-origin';
  }

  private ownOrigins(req: Request): string[] {
    return [new URL(this.config.publicUrl).origin, `${req.protocol}://${req.headers.host ?? ''}`];
  }

  private keepCookie(form: FormRecord, secret: string, req: Request): string {
    return resumeCookie(form.publicId, secret, req.protocol === 'https', this.config.partialResponseRetentionDays);
  }

  private newState(form: FormRecord, answers: RawAnswers, hidden: Record<string, string>): PageState {
    const first = route(form, answers, hidden).onPath[0];
    const now = Date.now();
    const state: PageState = {
      f: form.id,
      n: this.sessions.nonce(),
      t: now,
      o: now,
      a: answers,
      h: hidden,
      s: [first?.key ?? ''],
      r: [],
    };
    if (form.spamProtection === 'always') state.c = 1;
    return state;
  }

  /**
   * A fresh page nobody answered yet (the one-page form, or a walk's first page without hidden
   * values): drawn once per form version and kept (FrozenPages), with this request's own signed
   * state put in. Undefined when it cannot be kept (then it is drawn as before).
   */
  private async frozenPage(form: FormRecord, page: 'one' | 'first'): Promise<string | undefined> {
    const files = form.blocks.some((b) => b.type === 'file_upload');
    const plan = files ? await this.workspaces.planOf(form.workspaceId) : undefined;
    const key = { formId: form.id, version: form.version, page, plan, language: form.language };
    const kept = await this.frozen.page(key, async (slot) => {
      const fresh = this.newState(form, {}, {});
      if (page === 'one') {
        // As spamView draws it: the page's blocks recorded as shown, the challenge as the form asks.
        const state: StateTemplate = {
          s: fresh.s,
          r: pagesOf(form.blocks)[0]?.blocks.map((b) => b.id) ?? [],
          c: fresh.c,
        };
        const spam = { state: slot, challenge: fresh.c ? challengeUrl(form) : undefined };
        return { html: formPage(form, {}, [], await this.fileView(form, {}), spam), state };
      }
      const r = route(form, fresh.a, fresh.h);
      const first = r.onPath[0] ?? r.pages[0];
      const state: StateTemplate = { s: fresh.s, r: shownBlocks(first, r).map((b) => b.id), c: fresh.c };
      return { html: await this.drawStep(form, fresh, first, r, [], undefined, fresh.a, slot), state };
    });
    if (!kept) return undefined;
    const now = Date.now();
    const { s, r, c } = kept.state!;
    const state: PageState = { f: form.id, n: this.sessions.nonce(), t: now, o: now, a: {}, h: {}, s, r };
    if (c) state.c = c;
    return FrozenPages.fill(kept, await this.states.sign(state));
  }

  /**
   * Draws `page` with the state signed into it (the blocks it shows recorded as drawn; a fresh
   * issue time), or with `signedAs` in its place (a page drawn once: frozenPage).
   */
  private async drawStep(
    form: FormRecord,
    state: PageState,
    page: Page,
    r: Route,
    errors: ErrorDetail[] = [],
    notice?: string,
    values = state.a,
    signedAs?: string,
  ): Promise<string> {
    const blocks = shownBlocks(page, r);
    const position = Math.max(1, r.onPath.indexOf(page) + 1);
    const signed = signedAs ?? (await this.states.sign({ ...state, t: Date.now(), r: blocks.map((b) => b.id) }));
    const files = await this.fileView(form, values, state.i);
    // Recall (issue 46): what the pages before this one answered and computed.
    const before = valuesBefore(form, r, page);
    const onPage = withSamePage(before.values, page.blocks);
    const fill = (b: Block) => recallBlock(b, onPage);
    return stepPage(
      form,
      {
        start: page.start && fill(page.start),
        blocks: blocks.map(fill),
        all: page.blocks.map(fill),
        logic: recallLogic(pageLogic(page, r, before.variables), before.values),
        position,
        total: Math.max(position, r.onPath.length),
        state: signed,
        back: state.s.length > 1,
        last: !nextPage(page.key, r),
        notice,
        files,
        saves: savesPartials(form),
        challenge: state.c ? challengeUrl(form) : undefined,
      },
      values,
      errors,
    );
  }

  /**
   * Reads a multipart post: its fields, and each file part for a file question of the form
   * streamed to storage (UploadsService.createFromStream, which stops at the block's limit: a 413
   * for the whole post), its upload id kept as the question's value. A file the block does not
   * take (type, name) is left out with a problem for the page; a part for anything else is read
   * and dropped.
   */
  private async receiveFiles(
    form: FormRecord,
    req: Request,
    problems: ErrorDetail[],
  ): Promise<{ fields: RawAnswers; cut: boolean; oversize: boolean }> {
    const fileBlocks = new Map(form.blocks.filter((b) => b.type === 'file_upload').map((b) => [b.id, b]));
    const plan = await this.workspaces.planOf(form.workspaceId);
    const files = [...fileBlocks.values()].reduce((n, b) => n + (b.maxFiles ?? 1), 0);
    const client = await this.clients.of(req.ip);
    let oversize = false;
    const onFile = async (part: FilePart) => {
      const block = fileBlocks.get(part.field);
      if (!block) return undefined; // read and dropped
      try {
        const input = { workspaceId: form.workspaceId, plan, form, block: block.id, client };
        const { uploadId } = await this.uploads.createFromStream(
          { ...input, filename: part.filename, contentType: part.contentType || 'application/octet-stream' },
          part.body,
        );
        return uploadId;
      } catch (err) {
        // Over its limit (nothing kept; the rest of the file is read and dropped, so the fields after it are known) or refused.
        const code = err instanceof ApiError ? err.code : undefined;
        if (code !== 'invalid_arguments' && code !== 'payload_too_large') throw err;
        oversize ||= code === 'payload_too_large';
        const path = code === 'invalid_arguments' ? (err as ApiError).details?.[0]?.path : undefined;
        const why =
          code === 'payload_too_large'
            ? 'size'
            : path === '/file'
              ? 'contents'
              : path === '/contentType'
                ? 'type'
                : 'other';
        const message = fileRefusedWords(block, part.filename, why, fileLimitBytes(block, plan) / MB);
        problems.push({ path: `/answers/${pointerSegment(block.id)}`, message });
        return undefined;
      }
    };
    // A post refused as a whole (too many fields or files, malformed) leaves none of its files behind.
    const post = await readMultipartPost(
      req.headers,
      req.body as Readable,
      { bytes: 200 * 1024, fields: 1000, files, drain: OVERSIZE_DRAIN_BYTES },
      onFile,
      (ids) => this.uploads.discard(ids),
    );
    return { ...post, oversize };
  }

  /** The files the values name (this form's, held by no response but this walk's partial) and each file question's limit. */
  private async fileView(form: FormRecord, values: RawAnswers, partialId?: string): Promise<FileView | undefined> {
    const fileBlocks = form.blocks.filter((b) => b.type === 'file_upload');
    if (!fileBlocks.length) return undefined;
    const plan = await this.workspaces.planOf(form.workspaceId);
    const ids = fileBlocks.flatMap((b) => [values[b.id] ?? []].flat()).filter((id) => UPLOAD_ID.test(id));
    return {
      kept: await this.pendingUploads(form.id, ids, partialId),
      limitMb: Object.fromEntries(fileBlocks.map((b) => [b.id, fileLimitBytes(b, plan) / MB])),
    };
  }

  /**
   * The names and sizes of the uploads among `ids` that belong to this form and no response holds
   * yet, or the walk's own partial holds (its id signed in the state): a walk's files, shown by the ids its posts carried (an id of another form, which a post
   * could name, shows nothing here and is refused by the submission's checks).
   */
  private async pendingUploads(formId: string, ids: string[], partialId?: string): Promise<FileView['kept']> {
    if (!ids.length) return new Map();
    const rows: Array<{ id: string; name: string; size: string }> = await currentManager(this.db).query(
      'SELECT id, name, size FROM uploads WHERE id = ANY($1::text[]) AND form_id = $2 AND (response_id IS NULL OR response_id = $3::uuid)',
      [ids, formId, partialId ?? null],
    );
    return new Map(rows.map((r) => [r.id, { name: r.name, size: Number(r.size) }]));
  }

  /**
   * The page's headers; with a file question, the page's script may also reach the storage's
   * upload origin (an S3 bucket takes the bytes straight from the browser).
   */
  private async headersFor(form: FormRecord): Promise<Record<string, string>> {
    const origins = await embedOriginsOf(currentManager(this.db), form.workspaceId);
    const challenge = form.spamProtection !== 'off';
    if (!form.blocks.some((b) => b.type === 'file_upload')) return pageHeaders(origins, undefined, challenge);
    return pageHeaders(origins, await this.uploadOrigin(), challenge);
  }

  /**
   * The one-page form's spam checks (issue 47): its signed state (when the form was first drawn,
   * `startedAt` on a page drawn again; whether it asks for the challenge) and the challenge's URL.
   */
  private async spamView(form: FormRecord, challenge: boolean, startedAt?: number): Promise<SpamView> {
    const state = this.newState(form, {}, {});
    // The one-page form shows all its questions: said so, or its post reads as "questions added".
    state.r = pagesOf(form.blocks)[0]?.blocks.map((b) => b.id) ?? [];
    if (startedAt) state.o = startedAt;
    if (challenge) state.c = 1;
    return { state: await this.states.sign(state), challenge: challenge ? challengeUrl(form) : undefined };
  }

  /**
   * The embedding JSON post's spam check (issue 47): no page, so no honeypot nor time; the
   * challenge (its payload in `altcha`) when the form asks for one. A post judged as spam is kept
   * and answered 201 as a response would be; a replayed challenge is refused (409).
   */
  private async spamOfJson(publicId: string, req: Request, body: Record<string, unknown>) {
    // The form as this instance last read it (as the submission's fast path uses it), else read now.
    const form = this.forms.recent(publicId) ?? (await this.findForm(publicId));
    if (!form || form.status !== 'published' || (await this.shut(form))) return undefined; // submit says why
    if (form.spamProtection === 'off' || form.access === 'invite') return undefined;
    const challenge = await this.spam.needsChallenge(form, req.ip);
    const verdict = await this.spam.judge(form, {
      honeypot: undefined,
      startedAt: 0,
      payload: body[CHALLENGE_FIELD],
      challenge,
    });
    if (verdict === 'replayed') throw challengeUsed();
    if (!verdict) return undefined;
    const answers = body.answers as Record<string, unknown>;
    const id = await this.spamKept.keep(currentManager(this.db), form.id, {
      answers,
      hidden: body.hidden as Record<string, string> | undefined,
      reason: verdict,
    });
    // Shaped as a stored response's answer, so the bot cannot tell.
    const at = new Date().toISOString();
    const hidden = body.hidden && Object.keys(body.hidden).length ? { hidden: body.hidden } : {};
    return { id, submittedAt: at, answers, ...hidden, status: 'completed', startedAt: at, updatedAt: at, lastPage: '' };
  }

  private uploadOriginOnce?: Promise<string>;
  /** The origin upload targets point to: signing one (no request is made) tells it, whichever store runs. */
  private uploadOrigin(): Promise<string> {
    this.uploadOriginOnce ??= this.storage
      .uploadTarget('origin/probe/upl_0', { size: 1, contentType: 'application/octet-stream', expiresAt: new Date() })
      .then((t) => new URL(t.url).origin);
    return this.uploadOriginOnce;
  }

  /** The form, or undefined when there is none (any other failure, say the database, stays an error). */
  /**
   * Why the form takes no answers now: its schedule (AccessService, which also closes a form whose
   * closesAt passed), else its status; undefined when it takes them.
   */
  private async shut(form: FormRecord): Promise<ApiError | undefined> {
    return (
      (await this.access.refusal(form, 'person')) ??
      (await this.access.whyFull(form, 'person')) ??
      (form.status === 'published' ? undefined : notAccepting(form.status))
    );
  }

  /**
   * The page of a respondent screened out (issue 47): the answers so far match a full quota (at
   * the page where they match, or when the submission found it full); its onFull ending, or the
   * form's closing words. Undefined when they match none.
   */
  private async screenedOut(form: FormRecord, r: Route): Promise<string | undefined> {
    if (!form.quotas?.length) return undefined;
    const quota = await this.access.fullQuotaMatched(form, answerFacts(r.stored, r.hidden));
    if (!quota) return undefined;
    const ref = quota.onFull.startsWith('ending:') ? quota.onFull.slice('ending:'.length) : undefined;
    if (ref)
      return thankYouPage(form, {
        ...endView(form, r.stored, r.hidden, { variables: {}, ending: ref }),
        redirectUrl: undefined,
      });
    return fullPage(this.access.fullError(form, quota.name, 'person'));
  }

  /**
   * The published form by public id; with the page's request, in the language the person reads
   * (issue 51): `?lang=`, else the best of Accept-Language among the form's languages, else its
   * default, its texts translated (falling back to the default's) and `language` set for the page's words.
   */
  private async findForm(publicId: string, req?: Request) {
    if (!PUBLIC_ID.test(publicId)) return undefined;
    try {
      const form = await this.forms.getPublic(publicId);
      if (!req || !form.languages?.length) return form;
      const asked = typeof req.query === 'object' ? (req.query as Record<string, unknown>).lang : undefined;
      const language = chooseLanguage(
        form.languages,
        typeof asked === 'string' ? asked : undefined,
        req.headers['accept-language'],
      )!;
      return { ...translate(form, language).form, language };
    } catch (err) {
      if (err instanceof ApiError && err.code === 'not_found') return undefined;
      throw err;
    }
  }
}

/** A published form as the respondent sees it, for a page that embeds it (nothing internal: no ids but the public ones, no dates). */
function formForEmbedding(form: FormRecord) {
  return {
    publicId: form.publicId,
    title: form.title,
    description: form.description,
    blocks: blocksView(form.blocks),
    ...(form.hiddenFields?.length ? { hiddenFields: form.hiddenFields } : {}),
  };
}

/** The notice of a page drawn again because the spam check became required after it was drawn without it. */
const ONE_MORE_STEP = 'One more step: wait until the check below says it is done, then submit again.';

/** Where the page's spam check widget fetches its challenge. */
function challengeUrl(form: FormRecord): string {
  return `/f/${form.publicId}/challenge`;
}

/** A post whose solved challenge was already used (a replay, or the form sent twice): nothing stored. */
function replayedPage(form: FormRecord): string {
  return messagePage(
    'This form was already sent',
    `This page's check that you are a person was already used, so nothing was stored this time. If you meant to send another answer, open the form again and send it from there. (“${form.title}”)`,
  );
}

function challengeUsed(): ApiError {
  return new ApiError('challenge_used', {
    hint: 'Fetch a new challenge from /f/{publicId}/challenge, solve it and send the answers again.',
  });
}

function formNotFound(): ApiError {
  return new ApiError('not_found', {
    message: 'There is no form at this address.',
    hint: 'Check the link you were given.',
  });
}

function notFoundPage(): string {
  return messagePage('Form not found', 'There is no form at this address. Check the link you were given.');
}

/** The page of a respondent a full quota screens out with onFull "end" (its refusal in a person's words). */
function fullPage(err: ApiError): string {
  return messagePage('Thank you', `${err.message} ${err.hint}`);
}

/** The refusals of a form that takes no answers now (see shut()). */
const CLOSED_CODES = new Set<string>([
  'form_not_accepting_responses',
  'form_closed',
  'form_not_open',
  'response_limit_reached',
]);

/** The page of a refusal: its schedule's (the time in words, UTC), else its status's. */
function closedPage(err: ApiError, status: string): string {
  if (err.code === 'form_closed') return messagePage('This form is closed', `${err.message} ${err.hint}`);
  if (err.code === 'form_not_open') return messagePage('This form is not open yet', `${err.message} ${err.hint}`);
  if (err.code === 'response_limit_reached') return messagePage('This form is full', `${err.message} ${err.hint}`);
  return notAcceptingPage(status);
}

function notAcceptingPage(status: string): string {
  return status === 'closed'
    ? messagePage(
        'This form is closed',
        'This form is no longer accepting responses. If you still need to answer it, contact the person or organisation who sent you the form.',
      )
    : messagePage(
        'This form is not open yet',
        'This form is not accepting responses yet. Try again later, or contact the person or organisation who sent you the form.',
      );
}

/**
 * How much of files over their limit a post without JavaScript reads and drops, so that the page
 * can be shown again with the answers that come after them; past it the post is cut there.
 */
const OVERSIZE_DRAIN_BYTES = 64 * MB;

/** A file the page's script sent that the question does not take: the error envelope, in the page's words. */
function fileProblem(block: Block, filename: string | undefined, why: FileRefusal, limitMb?: number): ApiError {
  const message = fileRefusedWords(block, filename, why, limitMb);
  return new ApiError('invalid_arguments', {
    message,
    hint: why === 'size' ? 'Choose a smaller file.' : 'Choose another file.',
    details: [{ path: `/answers/${pointerSegment(block.id)}`, message }],
  });
}

/** The page for a post too large as a whole (too many fields or files): nothing of it is kept. */
function tooLargePage(form: FormRecord, message: string): string {
  return messagePage('The form is too large', `${message} Go back and send the form again. (“${form.title}”)`);
}

/** The page for a post whose bytes stopped coming (UPLOAD_IDLE_TIMEOUT_MS): nothing of it is kept. */
function stalledPage(form: FormRecord): string {
  return messagePage(
    'The upload stopped',
    `No data arrived for a while, so nothing was kept. Go back and send the form again. (“${form.title}”)`,
  );
}

/** The page for a post refused by a bound on what the page keeps without a credential (issue 45, 6.6): nothing of it is kept. */
function pendingLimitPage(form: FormRecord, message: string): string {
  return messagePage(
    'Too many uploads in progress',
    `${message} Nothing of this post was kept. Submit or remove files you sent earlier, or try again later. (“${form.title}”)`,
  );
}

/** The JSON refusal of a post from another site's page (the page's upload endpoint). */
function crossSite(): ApiError {
  return new ApiError('forbidden', {
    message: "Posts to a form's page must come from the page itself; nothing was stored.",
    hint: 'Open the form at its own address and send it from there.',
  });
}

/** The answer to a post whose body is not read to the end: the connection closes after it. */
function closing(): Record<string, string> {
  return { Connection: 'close' };
}

/** Without the form's headers (an unknown form, say), no site may frame the page. */
function sendPage(res: Response, status: number, html: string, headers = pageHeaders([])) {
  res.status(status).headers(headers).type('text/html; charset=utf-8').send(html);
}
