/**
 * Uploads (issue 35): a file sent for a file_upload block is `pending` until a response names it,
 * then held by that response and deleted with it (rows and objects). See docs/tools.md, "Files".
 */
import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { Plan } from '../common/access/roles';
import type { Block } from '../forms/blocks';
import { FileStorage } from '../storage/file-storage';

export interface UploadForm {
  id: string;
  publicId: string;
  blocks: Block[];
}

export interface CreateUploadInput {
  workspaceId: string;
  plan: Plan;
  form: UploadForm;
  /** The block's id or ref. */
  block: string;
  filename: string;
  contentType: string;
  /** Bytes, as declared. */
  size: number;
}

export interface CreatedUpload {
  uploadId: string;
  url: string;
  method: 'PUT';
  headers: Record<string, string>;
  expiresAt: string;
}

export interface UploadDescription {
  uploadId: string;
  name: string;
  size: number;
  contentType: string;
}

export interface AttachInput {
  workspaceId: string;
  formId: string;
  responseId: string;
  /** Per file_upload block answered: its id, the key the caller used (for error paths), the ids. */
  files: Array<{ blockId: string; key: string; uploadIds: string[] }>;
}

@Injectable()
export class UploadsService {
  constructor(private readonly storage: FileStorage) {}

  /** A pending upload and where to send its bytes (valid 15 minutes). */
  create(input: CreateUploadInput): Promise<CreatedUpload> {
    void input;
    throw new Error('not implemented yet');
  }

  /** The same, but the bytes come through the service (the respondent page without JavaScript). */
  createFromStream(
    input: Omit<CreateUploadInput, 'size'>,
    body: NodeJS.ReadableStream,
  ): Promise<{ uploadId: string; size: number }> {
    void input;
    void body;
    throw new Error('not implemented yet');
  }

  /** Inside the submission's transaction: checks each named upload and marks it held by responseId. */
  attach(manager: EntityManager, input: AttachInput): Promise<void> {
    void manager;
    void input;
    throw new Error('not implemented yet');
  }

  /** name, size, contentType of uploads (for reads). */
  describe(manager: EntityManager, uploadIds: string[]): Promise<Map<string, UploadDescription>> {
    void manager;
    void uploadIds;
    throw new Error('not implemented yet');
  }

  /** Deletes the uploads (rows, then objects after commit) held by these responses. */
  deleteForResponses(manager: EntityManager, responseIds: string[]): Promise<void> {
    void manager;
    void responseIds;
    throw new Error('not implemented yet');
  }

  /** Deletes the uploads (rows, then objects after commit) of this form. */
  deleteForForm(manager: EntityManager, formId: string): Promise<void> {
    void manager;
    void formId;
    throw new Error('not implemented yet');
  }

  /** Deletes uploads no response named within 24 hours (rows and objects), in bounded batches. */
  sweep(now = new Date()): Promise<number> {
    void now;
    throw new Error('not implemented yet');
  }
}
