/** @Public(): the mark of a route that needs no credential. */
import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'formwork:public';
/** Marks a route that needs no credential (discovery documents, health, the respondent page). */
export const Public = () => SetMetadata(IS_PUBLIC, true);
