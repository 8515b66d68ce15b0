/** Text kept to its first `max` characters, the rest counted: what a step can make a tool say is bounded. Pure. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)} … (${text.length - max} more characters)`;
}
