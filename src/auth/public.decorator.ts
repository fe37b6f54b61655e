/** @Public(): the mark of a route that needs no credential. */
import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'formwork:public';
/** Marks a route that needs no credential (discovery documents, health, the respondent page). */
export const Public = () => SetMetadata(IS_PUBLIC, true);

export const IS_CREDENTIAL_OPTIONAL = 'formwork:credential-optional';

/**
 * @CredentialOptional(), beside @Public(): a credential is not needed, but one sent is checked
 * (401 when it is not valid) and sets req.principal, so the answer may fit it (GET /api/v1/tools).
 */
export const CredentialOptional = () => SetMetadata(IS_CREDENTIAL_OPTIONAL, true);
