/** Content-Disposition for downloads: always attachment, never inline. */

/**
 * `attachment` with the name twice (RFC 6266): an ASCII fallback for old clients, and the UTF-8
 * name percent-encoded in filename*. Nothing of the name can end the header or add a parameter.
 */
export function attachmentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\%;]/g, '_') || 'file';
  const encoded = encodeURIComponent(filename).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
