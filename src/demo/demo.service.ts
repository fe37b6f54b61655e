import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { OAuthService } from '../oauth/oauth.service';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { inTransaction } from '../database/transaction';
import { BlockInput } from '../forms/blocks';
import { FormsService } from '../forms/forms.service';
import { ResponseSequencer } from '../responses/response-sequencer';
import { ResponsesService } from '../responses/responses.service';
import { TokensService } from '../tokens/tokens.service';
import { WorkspacesService } from '../workspaces/workspaces.service';
import { SAMPLE_COMMENTS as COMMENTS, SAMPLE_NAMES as NAMES } from './sample-answers';

export const DEMO_SLUG = 'demo';
export const DEMO_OWNER_EMAIL = 'owner@demo.formwork.local';

/** The demo's "Customer feedback" form (also the export bench's form). */
export const FEEDBACK_BLOCKS: BlockInput[] = [
  { type: 'statement', title: 'Thanks for trying Formwork! Two minutes, eight questions.' },
  { type: 'short_text', title: 'What is your name?' },
  { type: 'email', title: 'Your email', required: true },
  {
    type: 'multiple_choice',
    title: 'How did you hear about us?',
    required: true,
    choices: ['Search', 'A friend', 'Social media', 'Other'],
  },
  {
    type: 'checkboxes',
    title: 'Which features do you use?',
    choices: ['Forms', 'Responses API', 'Summaries', 'Webhooks'],
  },
  { type: 'rating', title: 'How would you rate Formwork?', required: true, max: 5 },
  { type: 'linear_scale', title: 'How likely are you to recommend us?', min: 0, max: 10 },
  { type: 'yes_no', title: 'May we contact you about your answers?' },
  { type: 'long_text', title: 'Anything else?' },
];

/**
 * Where the feedback form's people came from (its hidden field `source`, from the shared link's
 * `?source=`), cycling with a period (7) prime to the other answers' so no answer follows from it:
 * 52 newsletter, 34 twitter, 34 direct of the 120.
 */
export const DEMO_SOURCES = ['newsletter', 'twitter', 'direct', 'newsletter', 'direct', 'twitter', 'newsletter'];

/** A demo workspace (Pro) with forms and responses, and a fresh admin token to explore it. */
@Injectable()
export class DemoService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly workspaces: WorkspacesService,
    private readonly tokens: TokensService,
    private readonly forms: FormsService,
    private readonly responses: ResponsesService,
    private readonly sequencer: ResponseSequencer,
    private readonly oauth: OAuthService,
  ) {}

  async create(): Promise<{
    workspace: { id: string; slug: string; name: string; plan: string };
    token: string;
    tokenId: string;
    forms: string[];
    created: boolean;
  }> {
    const existing = await this.workspaces.findBySlug(DEMO_SLUG);
    let formIds: string[];
    let workspace = existing;
    if (!workspace) {
      workspace = (
        await this.workspaces.create({
          name: 'Demo workspace',
          slug: DEMO_SLUG,
          plan: 'pro',
          ownerEmail: DEMO_OWNER_EMAIL,
        })
      ).workspace;
      formIds = await this.seedForms(workspace.id);
    } else {
      formIds = (await this.forms.list(workspace.id, { limit: 200, offset: 0 })).forms.map((f) => f.publicId);
    }
    const { token, view } = await this.tokens.create({
      workspaceSlug: DEMO_SLUG,
      name: `demo token ${new Date().toISOString()}`,
      role: 'admin',
    });
    return {
      workspace: { id: workspace.id, slug: workspace.slug, name: workspace.name, plan: workspace.plan },
      token,
      tokenId: view.id,
      forms: formIds,
      created: !existing,
    };
  }

  /**
   * Gives the demo owner a new random password (to print once) and returns it. It works for one
   * sign-in, which asks for a new password first: the printed one stays in the terminal, and
   * later starts listen on every interface.
   */
  async ownerPassword(): Promise<{ email: string; password: string }> {
    const password = randomBytes(15).toString('base64url');
    await this.oauth.setPassword(DEMO_OWNER_EMAIL, password, 'unchanged', true);
    return { email: DEMO_OWNER_EMAIL, password };
  }

  /**
   * The demo's forms with a history that reads right: each form created, then published, then
   * answered, then (the RSVP) closed, all in the past. Hours before now: the feedback form was
   * created 12 days ago and answered hourly for 5 days after its publication; the RSVP ran from 10
   * to 3 days ago; the draft was started yesterday. Oldest first, as list_forms lists them: the open
   * feedback form comes first, as the README's first session expects.
   */
  private async seedForms(workspaceId: string): Promise<string[]> {
    const now = Date.now();
    const hoursAgo = (h: number) => new Date(now - h * 3600_000);
    return inTransaction(this.db, async (tx) => {
      const feedback = await this.forms.create(
        workspaceId,
        {
          title: 'Customer feedback',
          description: 'What our users think.',
          blocks: FEEDBACK_BLOCKS,
          hiddenFields: ['source'],
        },
        tx,
        hoursAgo(12 * 24),
      );
      await this.forms.setStatus(feedback.id, 'published', tx, hoursAgo(12 * 24 - 1));
      const published = await this.forms.get(workspaceId, feedback.publicId, tx);
      const [, name, email, heard, features, rating, scale, contact, comment] = published.blocks.map((b) => b.id);
      for (let i = 0; i < 120; i++) {
        const answers: Record<string, unknown> = {
          [email]: `person${i}@example.com`,
          [heard]: ['Search', 'A friend', 'Social media', 'Other'][i % 4],
          [rating]: 1 + ((i * 7) % 5),
        };
        if (i % 3 !== 0) answers[name] = NAMES[i % NAMES.length];
        if (i % 2 === 0) answers[features] = ['Forms', ...(i % 4 === 0 ? ['Summaries'] : [])];
        if (i % 5 !== 0) answers[scale] = (i * 3) % 11;
        answers[contact] = i % 2 === 1;
        if (i % 4 === 1) answers[comment] = COMMENTS[i % COMMENTS.length];
        // From an hour after publication, hourly: the last one about 7 days ago.
        await this.responses.create(
          published,
          answers,
          {
            source: 'import',
            submittedAt: hoursAgo(12 * 24 - 2 - i),
            hidden: { source: DEMO_SOURCES[i % DEMO_SOURCES.length] },
          },
          tx,
        );
      }
      // Sequenced and counted now, so that the demo starts settled (and its counters are right at once).
      await this.sequencer.settle(published.id, tx);

      const rsvp = await this.forms.create(
        workspaceId,
        {
          title: 'Team offsite RSVP',
          blocks: [
            { type: 'yes_no', title: 'Will you come?', required: true },
            { type: 'dropdown', title: 'Dietary needs', choices: ['None', 'Vegetarian', 'Vegan', 'Gluten-free'] },
            { type: 'date', title: 'Arrival date' },
          ],
        },
        tx,
        hoursAgo(10 * 24),
      );
      await this.forms.setStatus(rsvp.id, 'published', tx, hoursAgo(10 * 24 - 2));
      await this.forms.setStatus(rsvp.id, 'closed', tx, hoursAgo(3 * 24));

      const draft = await this.forms.create(
        workspaceId,
        {
          title: 'Bug report (draft)',
          blocks: [
            { type: 'url', title: 'Page where it happened' },
            { type: 'long_text', title: 'What happened?', required: true },
            { type: 'phone', title: 'Phone (optional)' },
            { type: 'number', title: 'How many times?', min: 1 },
          ],
        },
        tx,
        hoursAgo(24),
      );
      return [feedback.publicId, rsvp.publicId, draft.publicId];
    });
  }
}
