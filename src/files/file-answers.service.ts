/** Shows the file answers of responses read by a credential: names, sizes, types and links bound to it. */
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { currentManager } from '../database/transaction';
import type { Block } from '../forms/blocks';
import { UploadsService } from '../uploads/uploads.service';
import { fileKeys, namedUploads, showFiles } from './file-answers';
import { FileLinks, FileReader } from './file-links';

@Injectable()
export class FileAnswers {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly uploads: UploadsService,
    private readonly links: FileLinks,
  ) {}

  /**
   * Replaces, in place, the upload ids of these responses' file answers by
   * `[{ uploadId, name, size, contentType, url }]`: one query for the page, links for `reader`.
   */
  async show(
    views: Array<{ answers: Record<string, unknown> }>,
    form: { blocks: Block[] },
    answersBy: 'id' | 'ref' | undefined,
    reader: FileReader,
  ): Promise<void> {
    const keys = fileKeys(form.blocks, answersBy === 'ref');
    const ids = namedUploads(
      views.map((v) => v.answers),
      keys,
    );
    if (!ids.length) return;
    const described = await this.uploads.describe(currentManager(this.db), ids);
    const link = await this.links.signer(reader);
    for (const view of views) view.answers = showFiles(view.answers, keys, described, link);
  }
}
