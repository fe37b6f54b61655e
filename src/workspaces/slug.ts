/** A workspace slug: lower-case letters, digits and inner dashes, at most 63 characters. */
export const SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
