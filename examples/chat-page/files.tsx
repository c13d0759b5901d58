/**
 * Files in the example chat: a file part of a message (an image shown, a
 * document linked), and the attach input whose files go with the next
 * message (useChat's sendMessage({ text, files }); the API stores them and
 * the model reads them, or the send is refused naming the file).
 */
import type { FileUIPart } from 'ai';
import { useRef, useState } from 'react';

/** The types the model reads (docs/http-api.md, "Files"). */
const ACCEPTED = 'image/png,image/jpeg,image/gif,image/webp,application/pdf';

/** A message's file part. */
export function FilePart({ part }: { part: FileUIPart }) {
  const name = part.filename ?? part.mediaType;
  if (part.mediaType.startsWith('image/')) return <img className="file" src={part.url} alt={name} />;
  return (
    <a className="file" href={part.url} download={part.filename}>
      {name}
    </a>
  );
}

/** The files chosen for the next message, the input that chooses them, and a way to clear both after a send. */
export function useAttachments(disabled: boolean) {
  const [files, setFiles] = useState<FileList | undefined>();
  const input = useRef<HTMLInputElement>(null);
  const picker = (
    <input
      ref={input}
      type="file"
      aria-label="Attach"
      multiple
      accept={ACCEPTED}
      disabled={disabled}
      onChange={(e) => setFiles(e.target.files ?? undefined)}
    />
  );
  const clear = () => {
    setFiles(undefined);
    if (input.current) input.current.value = '';
  };
  return { files: files && files.length > 0 ? files : undefined, picker, clear };
}
